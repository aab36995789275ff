package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSQLPipelineDimensionChange runs a pipeline whose sql transform joins
// a fact table with a dimension table through the binary, and after every
// run compares the destination with floe query of the same SELECT: after
// the first build, after new facts, after a change of the dimension alone
// (which must reach the rows it joins), and after a dimension row is
// deleted.
func TestSQLPipelineDimensionChange(t *testing.T) {
	work := t.TempDir()
	const query = "SELECT o.id, o.amount, c.region FROM shop.orders o JOIN shop.customers c ON o.customer_id = c.id"
	files := map[string]string{
		"p.yaml": `transforms:
  - name: enriched
    type: sql
    query: ` + query + `
    key: id
    destination: shop.enriched
`,
		"orders.csv":    "id,customer_id,amount\n1,10,5\n2,20,7\n3,10,9\n",
		"more.csv":      "id,customer_id,amount\n4,20,11\n5,30,13\n",
		"customers.csv": "id,region\n10,north\n20,south\n",
		"new_cust.csv":  "id,region\n30,east\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(work, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	floe := func(args ...string) string {
		t.Helper()
		out := runFloe(t, work, args)
		if !strings.HasPrefix(out, "exit 0\n") {
			t.Fatalf("floe %v:\n%s", args, out)
		}
		return out
	}
	for _, args := range [][]string{
		{"namespace", "create", "shop"},
		{"table", "create", "shop.orders", "--schema", "id long not null, customer_id long, amount long", "--identifier", "id", "--quiet"},
		{"table", "create", "shop.customers", "--schema", "id long not null, region string", "--identifier", "id", "--quiet"},
		{"table", "append", "shop.orders", "orders.csv", "--quiet"},
		{"table", "append", "shop.customers", "customers.csv", "--quiet"},
	} {
		floe(args...)
	}
	check := func(step string, wantRows int) {
		t.Helper()
		floe("run", "p.yaml", "--once", "--quiet")
		got := floe("query", "SELECT * FROM shop.enriched ORDER BY id", "--format", "csv")
		want := floe("query", "SELECT * FROM ("+query+") ORDER BY id", "--format", "csv")
		if got != want {
			t.Fatalf("%s: shop.enriched\n%s\nfloe query of the SELECT\n%s", step, got, want)
		}
		if n := strings.Count(got, "\n") - 2; n != wantRows { // exit line, header
			t.Fatalf("%s: %d rows, want %d:\n%s", step, n, wantRows, got)
		}
	}
	check("first build", 3)
	floe("table", "append", "shop.orders", "more.csv", "--quiet")
	check("new orders (one without its customer yet)", 4)
	floe("table", "update", "shop.customers", "--set", "region = 'west'", "--where", "id = 10", "--quiet")
	check("a customer's region changed", 4)
	if out := floe("query", "SELECT count(*) AS n FROM shop.enriched WHERE region = 'west'", "--format", "csv"); !strings.Contains(out, "\n2\n") {
		t.Fatalf("the dimension change did not reach both orders of customer 10:\n%s", out)
	}
	floe("table", "append", "shop.customers", "new_cust.csv", "--quiet")
	check("the missing customer arrived", 5)
	floe("table", "delete", "shop.customers", "--where", "id = 20", "--quiet")
	check("a customer deleted", 3)
}
