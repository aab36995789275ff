package scan_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/tableops"
)

// TestPlanWholeFiles checks that a data file iceberg-go splits into byte
// ranges (larger than read.split.target-size, several row groups) is
// planned once: floe reads whole files, so a task per range would read
// its rows once per range.
func TestPlanWholeFiles(t *testing.T) {
	e := tabletest.New(t)
	props := iceberg.Properties{
		"write.parquet.row-group-limit": "10",
		"read.split.target-size":        "1",
	}
	if _, err := e.Create("t", "id long not null, data string", "", nil, props); err != nil {
		t.Fatal(err)
	}
	var data [][]any
	for i := range 100 {
		data = append(data, []any{int64(i), fmt.Sprintf("row %d", i)})
	}
	out, err := tableops.Append(e.Ctx, e.Target("t", ""), tabletest.Seq(tabletest.ArrowSchema(e.Load("t")), data))
	if err != nil {
		t.Fatal(err)
	}
	tbl := out.Table
	ctx := context.Background()
	fts, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(fts) < 2 {
		t.Fatalf("iceberg-go planned %d tasks; the test needs a file split into ranges", len(fts))
	}
	tasks, err := scan.Plan(ctx, tbl, tbl.CurrentSnapshot(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 1 {
		t.Fatalf("scan.Plan gave %d tasks for one data file, want 1", len(tasks))
	}
	got, err := e.Rows(tbl, scan.At{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(data) {
		t.Fatalf("scan.Rows read %d rows, want %d", len(got), len(data))
	}
}
