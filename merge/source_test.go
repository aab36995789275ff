package merge

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/floedata/floe/internal/rowfile"
)

// TestSourceFileSchema: the schema a MERGE source file is read with.
func TestSourceFileSchema(t *testing.T) {
	hint := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "price", Type: &arrow.Decimal128Type{Precision: 10, Scale: 2}, Nullable: true},
	}, nil)
	for _, c := range []struct {
		name, content string
		want          string // "name type, ..." or "error: substring"
	}{
		{"a.csv", "id,note,PRICE\n1,x,2.50\n", "id int64, note utf8, PRICE decimal(10, 2)"},
		{"bom.csv", "\xEF\xBB\xBFid,n\n1,2\n", "id int64, n utf8"},
		{"empty.csv", "", "error: needs a header row"},
		{"a.jsonl", `{"id": 1, "flag": true, "n": 1, "x": null}` + "\n" + `{"id": 2, "n": 2.5, "s": "a", "price": "1.00"}` + "\n",
			"id int64, flag bool, n float64, x utf8, s utf8, price decimal(10, 2)"},
		{"arr.json", `[{"id": 1, "k": 10}, {"id": 2, "k": 11}]`, "id int64, k int64"},
		{"mixed.jsonl", `{"k": 1}` + "\n" + `{"k": "a"}` + "\n", "error: has long and string values"},
		{"nested.jsonl", `{"k": {"a": 1}}` + "\n", "error: holds JSON objects or arrays"},
		{"hintnested.jsonl", `{"id": [1]}` + "\n", "id int64"}, // a target column: its type decides, the reader reports bad values
		{"scalar.jsonl", `5` + "\n", "error: expected a JSON object"},
	} {
		path := filepath.Join(t.TempDir(), c.name)
		if err := os.WriteFile(path, []byte(c.content), 0o644); err != nil {
			t.Fatal(err)
		}
		format, err := rowfile.FormatFromPath(path)
		if err != nil {
			t.Fatal(err)
		}
		s, err := sourceFileSchema(path, format, hint)
		got := ""
		if err != nil {
			got = "error: " + err.Error()
		} else {
			var parts []string
			for _, f := range s.Fields() {
				if !f.Nullable || f.HasMetadata() {
					t.Errorf("%s: field %s must be nullable without metadata", c.name, f.Name)
				}
				parts = append(parts, f.Name+" "+f.Type.String())
			}
			got = strings.Join(parts, ", ")
		}
		if strings.HasPrefix(c.want, "error: ") {
			if !strings.Contains(got, strings.TrimPrefix(c.want, "error: ")) {
				t.Errorf("%s: got %q, want an error containing %q", c.name, got, c.want)
			}
		} else if got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
}
