package delta_test

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/floedata/floe/delta"
	"github.com/floedata/floe/internal/deltatest"
)

// readChanges runs Changes and collects the named columns (all when nil) as
// rows.
func readChanges(t testing.TB, tbl *delta.Table, opts delta.ChangesOptions, names []string) (*arrow.Schema, [][]string, error) {
	t.Helper()
	schema, seq, err := tbl.Changes(context.Background(), opts)
	if err != nil {
		return nil, nil, err
	}
	rows, err := deltatest.Rows(schema, seq, names)
	return schema, rows, err
}

// scanRows reads a snapshot as rows of all columns.
func scanRows(t testing.TB, s *delta.Snapshot) ([]string, [][]string) {
	t.Helper()
	schema, seq, err := s.Scan(context.Background(), delta.ScanOptions{})
	if err != nil {
		t.Fatalf("Scan version %d: %v", s.Version(), err)
	}
	var names []string
	for _, f := range schema.Fields() {
		names = append(names, f.Name)
	}
	rows, err := deltatest.Rows(schema, seq, nil)
	if err != nil {
		t.Fatalf("Scan version %d: %v", s.Version(), err)
	}
	return names, rows
}
