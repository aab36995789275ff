//go:build interop

package interop_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/floedata/floe/internal/rowjson"
)

// sparkRemote is the Spark Connect server builds are pushed down to
// (.ci/spark.sh starts one); the test skips without it, or fails under
// FLOE_SPARK_REQUIRED.
func sparkRemote(t *testing.T) string {
	t.Helper()
	r := os.Getenv("FLOE_SPARK_REMOTE")
	if r == "" {
		msg := "no Spark Connect server for the push-down: run under .ci/spark.sh (it sets FLOE_SPARK_REMOTE)"
		if os.Getenv("FLOE_SPARK_REQUIRED") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return r
}

// pushdownPipeline builds each transform type twice, --engine local and
// --engine spark, into twin outputs.
func pushdownPipeline(filter string) string {
	var b strings.Builder
	b.WriteString("transforms:\n")
	for _, e := range []string{"local", "spark"} {
		fmt.Fprintf(&b, "  - {name: sync_%[1]s, type: sync, source: ns.src, destination: ns.sync_%[1]s, key: [id], filter: %[2]q, columns: [id, cat, amount, ts, note, tags], engine: %[1]s}\n", e, filter)
		fmt.Fprintf(&b, "  - {name: filter_%[1]s, type: filter, source: ns.src, destination: ns.filter_%[1]s, filter: \"cat = 'a' OR cat IS NULL\", engine: %[1]s}\n", e)
		fmt.Fprintf(&b, "  - name: merge_%[1]s\n    type: merge\n    engine: %[1]s\n    source: ns.src\n    destination: ns.merge_%[1]s\n    key: [id]\n"+
			"    statement: \"MERGE INTO {destination} AS t USING {changes} AS s ON t.id = s.id WHEN MATCHED AND s._change_type = 'DELETE' THEN DELETE WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED AND s._change_type <> 'DELETE' THEN INSERT *\"\n", e)
	}
	return b.String()
}

// TestSparkPushdownDifferential: random source histories (the layouts'
// generators: copy-on-write, position deletes, deletion vectors, equality
// deletes, partitioned, evolved specs); after every step each transform
// type is built once with --engine local and once with --engine spark,
// and each pair of outputs, read by floe and by Spark, must be equal.
func TestSparkPushdownDifferential(t *testing.T) {
	remote := sparkRemote(t)
	seed := envInt(t, "FLOE_INTEROP_SEED", 20261201)
	steps := envInt(t, "FLOE_SPARK_DIFF_STEPS", 3)
	t.Logf("random seed %d, %d steps per layout (FLOE_INTEROP_SEED, FLOE_SPARK_DIFF_STEPS)", seed, steps)
	type layout struct {
		name      string
		version   int
		partition string
		mor       bool
		step      func(w *floeWriter, i int)
	}
	random := func(w *floeWriter, i int) { w.randomSteps("", 1, i) }
	layouts := []layout{
		{name: "copy-on-write-v2", version: 2, step: random},
		{name: "position-deletes-v2-partitioned", version: 2, partition: "cat", mor: true, step: random},
		{name: "deletion-vectors-v3", version: 3, mor: true, step: random},
		{name: "equality-deletes-v2", version: 2, mor: true, step: func(w *floeWriter, i int) {
			if i%2 == 1 {
				w.applyEquality("", i)
				return
			}
			w.randomSteps("", 1, i)
		}},
		{name: "evolved-spec-v2", version: 2, partition: "bucket(4, id)", mor: true, step: func(w *floeWriter, i int) {
			if i == 2 {
				w.l.exec("ALTER TABLE floe." + w.table + " ADD PARTITION FIELD cat")
				w.log = append(w.log, "Spark: ADD PARTITION FIELD cat")
			}
			w.randomSteps("", 1, i)
		}},
	}
	for li, lay := range layouts {
		t.Run(lay.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(seed), uint64(700+li)))
			l := newLab(t, "ns")
			args := []string{"table", "create", "ns.src", "--schema", layoutSchemaNoBinary, "--identifier", "id", "--format-version", strconv.Itoa(lay.version)}
			mode := "copy-on-write"
			if lay.mor {
				mode = "merge-on-read"
				for _, p := range []string{"write.delete.mode", "write.update.mode", "write.merge.mode"} {
					args = append(args, "--property", p+"=merge-on-read")
				}
			}
			if lay.partition != "" {
				args = append(args, "--partition-by", lay.partition)
			}
			if _, err := l.floe.Run(l.ctx, args...); err != nil {
				t.Fatal(err)
			}
			pfile := filepath.Join(l.wh.Dir, "pushdown.yaml")
			if err := os.WriteFile(pfile, []byte(pushdownPipeline("cat IN ('a', 'b') OR amount > 5000")), 0o644); err != nil {
				t.Fatal(err)
			}
			w := &floeWriter{l: l, r: r, table: "ns.src", rows: 25, mode: mode}
			w.step("", "append", 0)
			for i := 1; i <= steps; i++ {
				if i > 1 {
					lay.step(w, i)
				}
				if _, err := l.floe.Run(l.ctx, "run", pfile, "--once", "--spark-remote", remote); err != nil {
					t.Fatalf("history:\n  %s\nfloe run: %v", strings.Join(w.log, "\n  "), err)
				}
				for _, kind := range []string{"sync", "filter", "merge"} {
					loc, sp := "ns."+kind+"_local", "ns."+kind+"_spark"
					floeLocal := floeRows(t, l, loc)
					sameRows(t, fmt.Sprintf("step %d: %s read by floe vs %s read by floe (history:\n  %s)", i, loc, sp, strings.Join(w.log, "\n  ")), floeLocal, floeRows(t, l, sp))
					sameRows(t, fmt.Sprintf("step %d: %s read by floe vs %s read by Spark", i, loc, sp), floeLocal, l.sql("SELECT * FROM floe.%s", sp))
					sameRows(t, fmt.Sprintf("step %d: %s read by floe vs by Spark", i, loc), floeLocal, l.sql("SELECT * FROM floe.%s", loc))
					engine := l.sql("SELECT summary['floe.engine'] AS e FROM floe.%s.snapshots WHERE snapshot_id = (SELECT snapshot_id FROM floe.%s.refs WHERE name = 'main')", sp, sp)
					if len(engine.Rows) != 1 || engine.Rows[0][0] != "spark" {
						t.Fatalf("step %d: the head of %s does not say floe.engine=spark: %v", i, sp, engine.Rows)
					}
				}
			}
			t.Logf("history of ns.src:\n  %s", strings.Join(w.log, "\n  "))
		})
	}
}

// floeRows reads a table's current rows with floe.
func floeRows(t *testing.T, l *lab, table string) *rowjson.Table {
	t.Helper()
	got, err := l.floe.TableRows(l.ctx, table, "table", "scan", table)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestSparkPushdownThroughREST: floe and Spark share Iceberg's REST
// catalog (the cluster case): floe mounts the REST catalog in its Spark
// sessions and publishes through the same server.
func TestSparkPushdownThroughREST(t *testing.T) {
	remote := sparkRemote(t)
	l := newRESTLab(t, "ns")
	r := rand.New(rand.NewPCG(11, 12))
	if _, err := l.floe.Run(l.ctx, "table", "create", "ns.src", "--schema", layoutSchemaNoBinary, "--identifier", "id",
		"--property", "write.delete.mode=merge-on-read", "--property", "write.update.mode=merge-on-read"); err != nil {
		t.Fatal(err)
	}
	w := &floeWriter{l: l, r: r, table: "ns.src", rows: 20, mode: "merge-on-read"}
	w.step("", "append", 0)
	for i := 1; i <= 3; i++ {
		if i > 1 {
			w.randomSteps("", 1, i)
		}
		for _, e := range []string{"local", "spark"} {
			if _, err := l.floe.Run(l.ctx, "sync", "ns.src", "ns.out_"+e, "--key", "id", "--filter", "cat <> 'd'", "--engine", e, "--spark-remote", remote); err != nil {
				t.Fatal(err)
			}
		}
		want := floeRows(t, l, "ns.out_local")
		sameRows(t, fmt.Sprintf("step %d through REST: floe's read of the Spark build", i), want, floeRows(t, l, "ns.out_spark"))
		sameRows(t, fmt.Sprintf("step %d through REST: Spark's read of the Spark build", i), want, l.sql("SELECT * FROM floe.ns.out_spark"))
	}
}

// TestSparkPushdownDeltaSync: floe delta sync --engine spark reads the
// change feed with Spark's table_changes and merges it, with the Delta
// version in the same commit; a local twin syncs the same Delta table.
func TestSparkPushdownDeltaSync(t *testing.T) {
	remote := sparkRemote(t)
	l := newLab(t, "ns")
	path := filepath.Join(l.wh.Dir, "delta-src")
	d := "delta.`" + path + "`"
	l.exec("CREATE TABLE "+d+" (id BIGINT NOT NULL, status STRING, amount BIGINT) USING delta TBLPROPERTIES (delta.enableChangeDataFeed = true)",
		"INSERT INTO "+d+" VALUES (1, 'a', 10), (2, 'b', 20), (3, 'c', 30)")
	for _, e := range []string{"local", "spark"} {
		// The first run migrates the Delta snapshot with floe's engine.
		if _, err := l.floe.Run(l.ctx, "delta", "sync", path, "ns.d_"+e, "--equality-columns", "id", "--engine", e, "--spark-remote", remote); err != nil {
			t.Fatal(err)
		}
	}
	batches := [][]string{
		{"UPDATE " + d + " SET amount = amount + 1 WHERE id = 1", "DELETE FROM " + d + " WHERE id = 2", "INSERT INTO " + d + " VALUES (4, 'd', 40)"},
		{"UPDATE " + d + " SET status = 'z' WHERE id >= 3", "DELETE FROM " + d + " WHERE id = 4", "INSERT INTO " + d + " VALUES (4, 'dd', 41), (5, 'e', 50)"},
	}
	for i, b := range batches {
		l.exec(b...)
		for _, e := range []string{"local", "spark"} {
			if _, err := l.floe.Run(l.ctx, "delta", "sync", path, "ns.d_"+e, "--engine", e, "--spark-remote", remote); err != nil {
				t.Fatal(err)
			}
		}
		want := l.sql("SELECT * FROM %s", d)
		sameRows(t, fmt.Sprintf("batch %d: the local sync vs the Delta table", i), want, floeRows(t, l, "ns.d_local"))
		sameRows(t, fmt.Sprintf("batch %d: the Spark sync vs the Delta table", i), want, floeRows(t, l, "ns.d_spark"))
		v := column(t, l.sql("DESCRIBE HISTORY %s LIMIT 1", d), "version")
		props := l.sql("SHOW TBLPROPERTIES floe.ns.d_spark ('floe.delta.source-version')")
		if len(v) != 1 || fmt.Sprint(props.Rows[0][1]) != fmt.Sprint(v[0]) {
			t.Fatalf("batch %d: floe.delta.source-version is %v, the Delta table is at version %v", i, props.Rows, v)
		}
		engine := l.sql("SELECT summary['floe.engine'] AS e FROM floe.ns.d_spark.snapshots WHERE snapshot_id = (SELECT snapshot_id FROM floe.ns.d_spark.refs WHERE name = 'main')")
		if engine.Rows[0][0] != "spark" {
			t.Fatalf("batch %d: the Spark delta sync's snapshot says engine %v", i, engine.Rows)
		}
	}
}
