package catalog

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBackendNotCompiledIn opens catalogs whose types this test binary does
// not import (package catalog forces neither on its importers): each fails
// with ErrUnsupported, naming the package that registers it. REST is always
// compiled in: package catalog opens REST catalogs itself, with floe's HTTP
// transport (rest.go).
func TestBackendNotCompiledIn(t *testing.T) {
	for _, kind := range []string{"glue", "hive"} {
		cfg := filepath.Join(t.TempDir(), "catalogs.yaml")
		if err := os.WriteFile(cfg, []byte("catalog:\n  prod:\n    type: "+kind+"\n    uri: http://127.0.0.1:1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Open(t.Context(), Options{Name: "prod", ConfigFile: cfg})
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "github.com/apache/iceberg-go/catalog/"+kind) ||
			!strings.Contains(err.Error(), "floe_no_"+kind) || !strings.Contains(err.Error(), `catalog "prod"`) {
			t.Errorf("type %s: %v", kind, err)
		}
	}
}
