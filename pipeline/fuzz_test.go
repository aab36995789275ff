package pipeline_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/floedata/floe/pipeline"
)

// TestFileSizeLimit: a pipeline file past MaxFileSize is refused with an
// error that says so, by Parse and by Load (which reads no further).
func TestFileSizeLimit(t *testing.T) {
	ok := "transforms:\n  - name: a\n    type: filter\n    source: s.a\n    destination: s.b\n"
	big := ok + "# " + strings.Repeat("x", pipeline.MaxFileSize) + "\n"
	if _, err := pipeline.Parse("p.yaml", []byte(ok)); err != nil {
		t.Fatal(err)
	}
	_, err := pipeline.Parse("p.yaml", []byte(big))
	if !errors.Is(err, pipeline.ErrInvalidPipeline) || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("Parse: got %v", err)
	}
	path := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(path, []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := pipeline.Load(path); !errors.Is(err, pipeline.ErrInvalidPipeline) || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("Load: got %v", err)
	}
}
