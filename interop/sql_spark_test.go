//go:build interop

package interop_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// sqlSparkQueries are SQL transforms whose text means the same in DuckDB
// (floe) and Spark SQL: an inner join, a left join, a GROUP BY and
// GROUP BY over an inner and a left join (sum cast to bigint: DuckDB's
// sum of bigint is a 128-bit integer).
var sqlSparkQueries = []struct{ name, key, rule, query string }{
	{"j", "id", "join", "SELECT f.id, f.amount * 2 AS a2, d.name, upper(d.region) AS region FROM ns.fact f JOIN ns.dim d ON f.dim_id = d.id WHERE f.amount > 1"},
	{"l", "id", "join", "SELECT f.id, f.amount, d.name, coalesce(d.region, 'none') AS region FROM ns.fact f LEFT JOIN ns.dim d ON f.dim_id = d.id AND d.region <> 'xx'"},
	{"g", "cat", "group-by", "SELECT cat, count(*) AS n, CAST(sum(amount) AS BIGINT) AS total, min(amount) AS lo, max(amount) AS hi, count(DISTINCT amount) AS d FROM ns.fact WHERE cat IS NOT NULL GROUP BY cat"},
	{"gi", "name", "group-by-join", "SELECT d.name, count(*) AS n, CAST(sum(f.amount) AS BIGINT) AS total, min(f.amount) AS lo FROM ns.fact f JOIN ns.dim d ON f.dim_id = d.id GROUP BY d.name"},
	{"gl", "region", "group-by-join", "SELECT coalesce(d.region, 'none') AS region, count(*) AS n, CAST(sum(f.amount) AS BIGINT) AS total, max(f.amount) AS hi FROM ns.fact f LEFT JOIN ns.dim d ON f.dim_id = d.id GROUP BY coalesce(d.region, 'none')"},
}

// TestSQLTransformMatchesSpark: floe's SQL transforms (join, group-by
// and group-by-join rules), built incrementally by floe run (every build after the first)
// after each change of their
// sources (copy-on-write, position deletes, deletion vectors), equal the
// same query run by Spark in full over the sources' end state, read
// through Iceberg's own Spark runtime (multisets of rows, both read by
// Spark).
func TestSQLTransformMatchesSpark(t *testing.T) {
	type layout struct {
		version int
		mor     bool
	}
	for _, c := range []struct {
		name      string
		fact, dim layout
	}{
		{"fact-mor-v2-dim-cow-v3", layout{2, true}, layout{3, false}},
		{"fact-mor-v3-dim-mor-v2", layout{3, true}, layout{2, true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := newLab(t, "ns")
			l.exec("USE floe")
			floe := func(args ...string) {
				t.Helper()
				if _, err := l.floe.Run(l.ctx, args...); err != nil {
					t.Fatalf("floe %s: %v", strings.Join(args, " "), err)
				}
			}
			create := func(name, schema string, lay layout) {
				args := []string{"table", "create", name, "--schema", schema, "--key", "id", "--format-version", strconv.Itoa(lay.version)}
				if lay.mor {
					for _, p := range []string{"write.delete.mode", "write.update.mode", "write.merge.mode"} {
						args = append(args, "--property", p+"=merge-on-read")
					}
				}
				floe(args...)
			}
			files := 0
			appendRows := func(table string, lines ...string) {
				t.Helper()
				files++
				path := filepath.Join(l.wh.Dir, fmt.Sprintf("rows-%d.jsonl", files))
				if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				floe("table", "append", table, path)
			}
			create("ns.fact", "id long not null, dim_id long, cat string, amount long", c.fact)
			create("ns.dim", "id long not null, name string, region string", c.dim)
			var p strings.Builder
			p.WriteString("transforms:\n")
			for _, q := range sqlSparkQueries {
				fmt.Fprintf(&p, "  - name: %s\n    type: sql\n    query: %q\n    key: %s\n    destination: ns.out_%s\n", q.name, q.query, q.key, q.name)
			}
			pfile := filepath.Join(l.wh.Dir, "sql.yaml")
			if err := os.WriteFile(pfile, []byte(p.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			steps := []func(){
				func() {
					appendRows("ns.dim", `{"id":1,"name":"one","region":"eu"}`, `{"id":2,"name":"two","region":"us"}`, `{"id":3,"name":"three","region":"eu"}`)
					appendRows("ns.fact", `{"id":10,"dim_id":1,"cat":"a","amount":5}`, `{"id":11,"dim_id":1,"cat":"a","amount":7}`,
						`{"id":12,"dim_id":2,"cat":"b","amount":1}`, `{"id":13,"dim_id":9,"cat":"b","amount":2}`, `{"id":14,"dim_id":null,"cat":null,"amount":3}`)
				},
				func() {
					floe("table", "update", "ns.dim", "--set", "name = 'uno'", "--where", "id = 1")
					appendRows("ns.dim", `{"id":9,"name":"nine","region":"us"}`)
				},
				func() {
					floe("table", "delete", "ns.dim", "--where", "id = 2")
					floe("table", "update", "ns.fact", "--set", "dim_id = 3, amount = amount + 10", "--where", "id = 11")
					floe("table", "delete", "ns.fact", "--where", "id = 13")
				},
				func() {
					appendRows("ns.fact", `{"id":15,"dim_id":3,"cat":"c","amount":8}`, `{"id":16,"dim_id":2,"cat":"a","amount":4}`)
					floe("table", "update", "ns.dim", "--set", "region = 'xx'", "--where", "id = 3")
					floe("table", "update", "ns.fact", "--set", "cat = 'c'", "--where", "id = 10")
				},
			}
			for i, step := range steps {
				step()
				out, err := l.floe.Run(l.ctx, "run", pfile, "--once")
				if err != nil {
					t.Fatalf("step %d: floe run: %v", i, err)
				}
				t.Logf("step %d: floe run:\n%s", i, out)
				for _, q := range sqlSparkQueries {
					var line string
					for _, ln := range strings.Split(string(out), "\n") {
						if strings.HasPrefix(ln, q.name+": ") {
							line = ln
						}
					}
					if i > 0 && !strings.Contains(line, "incremental build") && !strings.Contains(line, "nothing new") {
						t.Fatalf("step %d: %s was not built incrementally: %q", i, q.name, line)
					}
				}
				for _, q := range sqlSparkQueries {
					out := "ns.out_" + q.name
					sameRows(t, fmt.Sprintf("step %d: %s (floe, read by Spark) vs the query run by Spark", i, out),
						l.sql("%s", q.query), l.sql("SELECT * FROM floe.%s", out))
					rule := l.sql("SELECT summary['floe.sql.rule'] AS r FROM floe.%s.snapshots WHERE snapshot_id = (SELECT snapshot_id FROM floe.%s.refs WHERE name = 'main')", out, out)
					if len(rule.Rows) != 1 || rule.Rows[0][0] != q.rule {
						t.Fatalf("step %d: %s: rule %v, want %s", i, out, rule.Rows, q.rule)
					}
				}
			}
		})
	}
}
