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

// FuzzParse feeds arbitrary bytes to the pipeline file parser: nothing
// panics, every error wraps ErrInvalidPipeline, and a file that parses has
// transforms with names, types and destinations. Run it with
//
//	go test ./pipeline -run '^$' -fuzz '^FuzzParse$' -fuzztime 1m
//
// Seeds: the corpus under testdata/fuzz/FuzzParse and the pipeline files
// of testdata/config.
func FuzzParse(f *testing.F) {
	// The inputs of the parse commands of testdata/config.
	if b, err := os.ReadFile(filepath.Join("testdata", "config")); err == nil {
		lines := strings.Split(string(b), "\n")
		for i := 0; i < len(lines); i++ {
			if lines[i] != "parse" {
				continue
			}
			var input []string
			for i++; i < len(lines) && lines[i] != "----"; i++ {
				input = append(input, lines[i])
			}
			f.Add([]byte(strings.Join(input, "\n") + "\n"))
		}
	}
	f.Add([]byte("transforms:\n  - name: a\n    type: sync\n    source: s.a\n    destination: s.b\n    key: id\n    filter: \"x > 1\"\n"))
	f.Add([]byte("catalog: {warehouse: ./wh}\ntransforms: [{name: d, type: delta, path: /x, destination: s.d, equality_columns: [id], every: 15m}]\n"))
	f.Add([]byte("a: &a [*a, *a]\n"))
	f.Add([]byte("transforms:\n  - name: m\n    type: merge\n    source: s.a\n    destination: s.m\n    key: [id]\n    statement: MERGE INTO {destination} t USING {changes} s ON t.id = s.id WHEN MATCHED THEN DELETE\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := pipeline.Parse("p.yaml", data)
		if err != nil {
			if !errors.Is(err, pipeline.ErrInvalidPipeline) {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			return
		}
		for _, tc := range file.Transforms {
			if tc.Name == "" || tc.Type == "" || tc.Destination == "" {
				t.Fatalf("a transform without name, type or destination parsed: %+v", tc)
			}
		}
	})
}
