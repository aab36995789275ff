package sparkpush

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/internal/tcpfault"
	"github.com/floedata/floe/pushdown"
)

const pipelineYAML = `catalog: {warehouse: .}
transforms:
  - {name: sync_local, type: sync, source: ns.src, destination: ns.sync_local, key: [id], filter: "status = 'active' OR amount > 25", columns: [id, amount, status], engine: local}
  - {name: sync_spark, type: sync, source: ns.src, destination: ns.sync_spark, key: [id], filter: "status = 'active' OR amount > 25", columns: [id, amount, status], engine: spark}
  - {name: filter_local, type: filter, source: ns.src, destination: ns.filter_local, filter: "amount > 10", engine: local}
  - {name: filter_spark, type: filter, source: ns.src, destination: ns.filter_spark, filter: "amount > 10", engine: spark}
  - name: merge_local
    type: merge
    engine: local
    source: ns.src
    destination: ns.merge_local
    key: [id]
    statement: "MERGE INTO {destination} AS t USING {changes} AS s ON t.id = s.id WHEN MATCHED AND s._change_type = 'DELETE' THEN DELETE WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED AND s._change_type <> 'DELETE' THEN INSERT *"
  - name: merge_spark
    type: merge
    engine: spark
    source: ns.src
    destination: ns.merge_spark
    key: [id]
    statement: "MERGE INTO {destination} AS t USING {changes} AS s ON t.id = s.id WHEN MATCHED AND s._change_type = 'DELETE' THEN DELETE WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED AND s._change_type <> 'DELETE' THEN INSERT *"
`

// TestSameResultEitherEngine builds sync, filter and merge transforms of
// one source with each engine after every step of a history, on the
// source layouts floe writes (copy-on-write, position deletes, deletion
// vectors, equality deletes, partitioned), and requires equal outputs with
// each build's engine in its snapshot summary.
func TestSameResultEitherEngine(t *testing.T) {
	remote(t)
	layouts := []struct {
		name   string
		create []string
		eq     bool
	}{
		{name: "copy-on-write-v2", create: []string{"--format-version", "2"}},
		{name: "position-deletes-v2-partitioned", create: []string{"--format-version", "2", "--partition-by", "status",
			"--property", "write.delete.mode=merge-on-read", "--property", "write.update.mode=merge-on-read", "--property", "write.merge.mode=merge-on-read"}},
		{name: "deletion-vectors-v3-equality-deletes", eq: true, create: []string{"--format-version", "3",
			"--property", "write.delete.mode=merge-on-read", "--property", "write.update.mode=merge-on-read", "--property", "write.merge.mode=merge-on-read"}},
	}
	for _, lay := range layouts {
		t.Run(lay.name, func(t *testing.T) {
			w := newWH(t)
			w.run("namespace", "create", "ns")
			w.run(append([]string{"table", "create", "ns.src", "--schema", "id long not null, status string, amount double", "--identifier", "id"}, lay.create...)...)
			if err := os.WriteFile(filepath.Join(w.dir, "p.yaml"), []byte(pipelineYAML), 0o644); err != nil {
				t.Fatal(err)
			}
			steps := []func(){
				func() {
					w.run("table", "append", "ns.src", w.file("a.jsonl", row(1, "active", 10), row(2, "closed", 20), row(3, "active", 30), row(4, "new", 40)))
				},
				func() { w.run("table", "update", "ns.src", "--set", "status = 'active'", "--where", "id = 2") },
				func() {
					w.run("table", "append", "ns.src", w.file("b.jsonl", row(5, "active", 5), row(6, "closed", 60)))
					w.run("table", "delete", "ns.src", "--where", "id = 1")
				},
				func() {
					args := []string{"apply", "ns.src", "--key", "id", "--changes", w.file("c.jsonl",
						change("UPDATE_AFTER", 3, "closed", 3), change("DELETE", 4, "", 0), change("INSERT", 7, "active", 70))}
					if lay.eq {
						args = append(args, "--delete-mode", "equality")
					}
					w.run(args...)
				},
				func() {}, // nothing new: no commit
				func() {
					w.run("table", "update", "ns.src", "--set", "amount = amount + 1", "--where", "status = 'active'")
				},
			}
			for i, step := range steps {
				step()
				w.run("run", filepath.Join(w.dir, "p.yaml"), "--once", "--spark-remote", os.Getenv(pushdown.EnvRemote))
				for _, pair := range [][2]string{{"ns.sync_local", "ns.sync_spark"}, {"ns.filter_local", "ns.filter_spark"}, {"ns.merge_local", "ns.merge_spark"}} {
					w.same(pair[0], pair[1])
					props, summary := w.props(pair[1])
					if summary[pushdown.SummaryEngine] != "spark" {
						t.Fatalf("step %d: %s head summary says engine %q, want spark: %v", i, pair[1], summary[pushdown.SummaryEngine], summary)
					}
					lp, lsum := w.props(pair[0])
					if lsum[pushdown.SummaryEngine] != "local" {
						t.Fatalf("step %d: %s head summary says engine %q, want local", i, pair[0], lsum[pushdown.SummaryEngine])
					}
					if props["watermark.source-snapshot-id"] != lp["watermark.source-snapshot-id"] {
						t.Fatalf("step %d: watermarks differ: %s %s, %s %s", i, pair[0], lp["watermark.source-snapshot-id"], pair[1], props["watermark.source-snapshot-id"])
					}
					for _, r := range w.refs(pair[1]) {
						if strings.HasPrefix(r, stagePrefix) {
							t.Fatalf("step %d: %s keeps staging branch %s after a clean build", i, pair[1], r)
						}
					}
				}
			}
		})
	}
}

// TestCommandsEitherEngine runs floe apply and floe merge with each engine
// on twin tables.
func TestCommandsEitherEngine(t *testing.T) {
	rem := remote(t)
	w := newWH(t)
	w.run("namespace", "create", "ns")
	for _, tbl := range []string{"ns.a_local", "ns.a_spark"} {
		w.run("table", "create", tbl, "--schema", "id long not null, status string, amount double", "--identifier", "id")
	}
	c1 := w.file("c1.jsonl", change("INSERT", 1, "a", 1), change("INSERT", 2, "b", 2), change("UPDATE_BEFORE", 2, "x", 0))
	c2 := w.file("c2.jsonl", change("DELETE", 1, "", 0), change("UPDATE_AFTER", 2, "bb", 2.5), change("INSERT", 3, "c", 3))
	seq := w.file("c3.jsonl", `{"id":3,"status":"c1","amount":1,"_change_type":"UPDATE_AFTER","seq":2}`,
		`{"id":3,"status":"c0","amount":0,"_change_type":"UPDATE_AFTER","seq":1}`, `{"id":4,"status":"d","amount":4,"_change_type":"INSERT","seq":1}`,
		`{"id":4,"status":"d","amount":4,"_change_type":"DELETE","seq":2}`)
	for i, c := range []string{c1, c2} {
		for _, e := range []string{"local", "spark"} {
			w.run("apply", "ns.a_"+e, "--changes", c, "--key", "id", "--engine", e, "--spark-remote", rem, "--property", fmt.Sprintf("wm=%d", i))
		}
		w.same("ns.a_local", "ns.a_spark")
	}
	for _, e := range []string{"local", "spark"} {
		w.run("apply", "ns.a_"+e, "--changes", seq, "--key", "id", "--sequence-column", "seq", "--engine", e, "--spark-remote", rem)
	}
	w.same("ns.a_local", "ns.a_spark")
	if p, _ := w.props("ns.a_spark"); p["wm"] != "1" {
		t.Fatalf("the watermark property did not land with the Spark apply: %v", p)
	}
	// Two changes for one key without a sequence column: both refuse.
	dup := w.file("dup.jsonl", change("INSERT", 9, "a", 1), change("INSERT", 9, "b", 2))
	before := w.rows("ns.a_spark")
	_, errs, code := w.try("apply", "ns.a_spark", "--changes", dup, "--key", "id", "--engine", "spark", "--spark-remote", rem)
	if code == 0 || !strings.Contains(errs, "several changes for one key") || !strings.Contains(errs, "nothing was committed") {
		t.Fatalf("duplicate keys on Spark: exit %d, %s", code, errs)
	}
	if _, _, code := w.try("apply", "ns.a_local", "--changes", dup, "--key", "id"); code == 0 {
		t.Fatal("duplicate keys: the local engine accepted them")
	}
	if strings.Join(before, "\n") != strings.Join(w.rows("ns.a_spark"), "\n") {
		t.Fatal("a refused Spark apply changed the table")
	}
	stmt := "MERGE INTO ns.a_%s t USING '%s' s ON t.id = s.id WHEN MATCHED AND s._change_type = 'DELETE' THEN DELETE WHEN MATCHED THEN UPDATE SET status = s.status WHEN NOT MATCHED THEN INSERT *"
	m := w.file("m.parquet.jsonl", change("DELETE", 2, "", 0), change("INSERT", 5, "e", 5), change("UPDATE_AFTER", 3, "cc", 9))
	for _, e := range []string{"local", "spark"} {
		out := w.run("merge", fmt.Sprintf(strings.Replace(stmt, "INSERT *", "INSERT (id, status, amount) VALUES (s.id, s.status, s.amount)", 1), e, m),
			"--engine", e, "--spark-remote", rem, "--property", "wm=m")
		_ = out
	}
	w.same("ns.a_local", "ns.a_spark")
	if _, s := w.props("ns.a_spark"); s[pushdown.SummaryEngine] != "spark" || s[pushdown.SummaryBuildID] == "" {
		t.Fatalf("the Spark merge's snapshot summary lacks floe.engine=spark or floe.commit-id: %v", s)
	}
}

// TestAutoChoosesBySize: auto keeps a small build local and pushes it down
// past the threshold, saying why in the output and the summary.
func TestAutoChoosesBySize(t *testing.T) {
	rem := remote(t)
	w := newWH(t)
	w.run("namespace", "create", "ns")
	w.run("table", "create", "ns.src", "--schema", "id long not null, status string, amount double", "--identifier", "id")
	w.run("table", "append", "ns.src", w.file("a.jsonl", row(1, "active", 10), row(2, "closed", 20)))
	_, errs, code := w.try("sync", "ns.src", "ns.small", "--key", "id", "--engine", "auto", "--spark-remote", rem)
	if code != 0 {
		t.Fatal(errs)
	}
	if _, s := w.props("ns.small"); s[pushdown.SummaryEngine] != "local" || !strings.Contains(s[pushdown.SummaryEngineReason], "within the threshold") {
		t.Fatalf("auto on a small build: %v", s)
	}
	out, errs, code := w.try("sync", "ns.src", "ns.big", "--key", "id", "--engine", "auto", "--spark-threshold", "1B", "--spark-remote", rem)
	if code != 0 {
		t.Fatal(errs)
	}
	if _, s := w.props("ns.big"); s[pushdown.SummaryEngine] != "spark" || !strings.Contains(s[pushdown.SummaryEngineReason], "above the threshold") {
		t.Fatalf("auto past the threshold: %v", s)
	}
	if !strings.Contains(out, "engine spark: auto: planned work") {
		t.Fatalf("the output does not say which engine auto chose and why: %s", out)
	}
	w.same("ns.small", "ns.big")
}

// TestLostAnswerResolvedByBuildID drops the Connect stream in the middle
// of the MERGE; floe either finds the build's commit on the staging branch
// by its id and publishes it once, or fails with nothing committed. A
// rerun converges to the local engine's result.
func TestLostAnswerResolvedByBuildID(t *testing.T) {
	rem := remote(t)
	t.Setenv(EnvLostWait, "20s")
	p, err := tcpfault.Start(strings.TrimPrefix(rem, "sc://"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	proxied := "sc://" + p.Addr()
	w := newWH(t)
	w.run("namespace", "create", "ns")
	w.run("table", "create", "ns.src", "--schema", "id long not null, status string, amount double", "--identifier", "id")
	w.run("table", "append", "ns.src", w.file("a.jsonl", row(1, "active", 10), row(2, "closed", 20), row(3, "active", 30)))
	w.run("sync", "ns.src", "ns.l", "--key", "id")
	w.run("sync", "ns.src", "ns.s", "--key", "id", "--engine", "spark", "--spark-remote", rem)
	found, failed := 0, 0
	for i, delay := range []time.Duration{0, 300 * time.Millisecond, 1200 * time.Millisecond, 2500 * time.Millisecond} {
		w.run("table", "update", "ns.src", "--set", fmt.Sprintf("amount = amount + %d", i+1), "--where", fmt.Sprintf("id %% 2 = %d", i%2))
		w.run("sync", "ns.src", "ns.l", "--key", "id")
		p.Arm([]byte("MERGE INTO"), delay)
		_, errs, code := w.try("sync", "ns.src", "ns.s", "--key", "id", "--engine", "spark", "--spark-remote", proxied)
		p.Disarm()
		switch {
		case code == 0 && strings.Contains(errs, "was lost"):
			found++
		case code == 0:
		case strings.Contains(errs, "answer lost") || strings.Contains(errs, "was lost"):
			failed++
			if !strings.Contains(errs, "nothing was committed") {
				t.Fatalf("a lost answer not found must say nothing was committed: %s", errs)
			}
			// Nothing published: a rerun without faults builds it.
			w.run("sync", "ns.src", "ns.s", "--key", "id", "--engine", "spark", "--spark-remote", rem)
		default:
			t.Fatalf("delay %s: exit %d: %s", delay, code, errs)
		}
		w.same("ns.l", "ns.s")
		pl, _ := w.props("ns.l")
		ps, _ := w.props("ns.s")
		if pl["watermark.source-snapshot-id"] != ps["watermark.source-snapshot-id"] {
			t.Fatal("watermarks differ after the rerun")
		}
	}
	t.Logf("resets %d: answer lost and found by build id %d, lost and not committed %d", p.Resets(), found, failed)
}

// TestLostCheckAnswerCommitsNothing drops the Connect stream while the
// build's duplicate-key check runs (before any write is published): the
// build fails saying nothing was committed, and a rerun converges.
func TestLostCheckAnswerCommitsNothing(t *testing.T) {
	rem := remote(t)
	p, err := tcpfault.Start(strings.TrimPrefix(rem, "sc://"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	proxied := "sc://" + p.Addr()
	w := newWH(t)
	w.run("namespace", "create", "ns")
	w.run("table", "create", "ns.src", "--schema", "id long not null, status string, amount double", "--identifier", "id")
	w.run("table", "append", "ns.src", w.file("a.jsonl", row(1, "active", 10), row(2, "closed", 20)))
	w.run("sync", "ns.src", "ns.l", "--key", "id")
	w.run("sync", "ns.src", "ns.s", "--key", "id", "--engine", "spark", "--spark-remote", rem)
	before, _ := w.props("ns.s")
	w.run("table", "update", "ns.src", "--set", "amount = amount + 1", "--where", "id = 1")
	w.run("sync", "ns.src", "ns.l", "--key", "id")
	p.Arm([]byte("HAVING count(*) > 1"), 0)
	_, errs, code := w.try("sync", "ns.src", "ns.s", "--key", "id", "--engine", "spark", "--spark-remote", proxied)
	p.Disarm()
	if p.Resets() == 0 {
		t.Fatalf("the proxy never saw the check statement (exit %d): %s", code, errs)
	}
	if code == 0 || !strings.Contains(errs, "was lost") || !strings.Contains(errs, "nothing was committed") {
		t.Fatalf("a lost answer to the check must fail the build saying nothing was committed: exit %d: %s", code, errs)
	}
	after, _ := w.props("ns.s")
	if before["watermark.source-snapshot-id"] != after["watermark.source-snapshot-id"] {
		t.Fatalf("the watermark moved although nothing was committed: %s -> %s", before["watermark.source-snapshot-id"], after["watermark.source-snapshot-id"])
	}
	w.run("sync", "ns.src", "ns.s", "--key", "id", "--engine", "spark", "--spark-remote", rem)
	w.same("ns.l", "ns.s")
}

// TestConcurrentLocalAndSpark: a local build and a Spark build of one
// output at once; one wins, the other commits nothing and says so.
func TestConcurrentLocalAndSpark(t *testing.T) {
	rem := remote(t)
	w := newWH(t)
	w.run("namespace", "create", "ns")
	w.run("table", "create", "ns.src", "--schema", "id long not null, status string, amount double", "--identifier", "id")
	w.run("table", "append", "ns.src", w.file("a.jsonl", row(1, "active", 10), row(2, "closed", 20)))
	w.run("sync", "ns.src", "ns.out", "--key", "id")
	w.run("sync", "ns.src", "ns.ref", "--key", "id")
	w.run("table", "update", "ns.src", "--set", "amount = 99", "--where", "id = 1")
	w.run("sync", "ns.src", "ns.ref", "--key", "id")
	var wg sync.WaitGroup
	var sparkErr string
	var sparkCode int
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, sparkErr, sparkCode = w.try("sync", "ns.src", "ns.out", "--key", "id", "--engine", "spark", "--spark-remote", rem)
	}()
	time.Sleep(300 * time.Millisecond) // the Spark build is planning or computing
	_, localErr, localCode := w.try("sync", "ns.src", "ns.out", "--key", "id")
	wg.Wait()
	switch {
	case localCode == 0 && sparkCode == 0:
		// The Spark build started after the local commit: it found nothing new.
		if !strings.Contains(sparkErr+localErr, "nothing") {
			t.Logf("both succeeded; one found nothing new")
		}
	case localCode == 0:
		if !strings.Contains(sparkErr, "nothing was committed") || !strings.Contains(sparkErr, "watermark moved") {
			t.Fatalf("the losing Spark build must say it committed nothing: %s", sparkErr)
		}
	case sparkCode == 0:
		if !strings.Contains(localErr, "nothing was committed") {
			t.Fatalf("the losing local build must say it committed nothing: %s", localErr)
		}
	default:
		t.Fatalf("both failed: local %s; spark %s", localErr, sparkErr)
	}
	w.same("ns.out", "ns.ref")
	// One commit of the change: the output's history holds it once.
	cat, err := catalog.Open(context.Background(), catalog.Options{Warehouse: w.dir})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	tbl, err := cat.LoadTable(context.Background(), "ns.out")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for s := tbl.CurrentSnapshot(); s != nil; {
		n++
		if s.ParentSnapshotID == nil {
			break
		}
		s = tbl.Metadata().SnapshotByID(*s.ParentSnapshotID)
	}
	if n != 2 {
		t.Fatalf("ns.out's main has %d snapshots, want 2 (the first build, then the change once)", n)
	}
}

// TestBadInput: no server, an Iceberg runtime that ignores snapshot
// properties, a catalog mismatch and a Spark error: each a clear error,
// nothing committed.
func TestBadInput(t *testing.T) {
	w := newWH(t)
	w.run("namespace", "create", "ns")
	w.run("table", "create", "ns.src", "--schema", "id long not null, status string, amount double", "--identifier", "id")
	w.run("table", "append", "ns.src", w.file("a.jsonl", row(1, "active", 10)))
	w.run("sync", "ns.src", "ns.out", "--key", "id")
	w.run("table", "append", "ns.src", w.file("b.jsonl", row(2, "active", 20)))
	before := w.rows("ns.out")
	props, _ := w.props("ns.out")
	unchanged := func(t *testing.T, what string) {
		t.Helper()
		after, _ := w.props("ns.out")
		if strings.Join(before, "\n") != strings.Join(w.rows("ns.out"), "\n") || after["watermark.source-snapshot-id"] != props["watermark.source-snapshot-id"] {
			t.Fatalf("%s: the output changed", what)
		}
	}
	t.Run("unreachable", func(t *testing.T) {
		_, errs, code := w.try("sync", "ns.src", "ns.out", "--key", "id", "--engine", "spark", "--spark-remote", "sc://127.0.0.1:1")
		if code == 0 || !strings.Contains(errs, "sc://127.0.0.1:1") || !strings.Contains(errs, "unreachable") || !strings.Contains(errs, "--engine local") {
			t.Fatalf("exit %d: %s", code, errs)
		}
		unchanged(t, "unreachable")
		t.Setenv(pushdown.EnvRemote, "")
		_, errs, code = w.try("sync", "ns.src", "ns.out", "--key", "id", "--engine", "spark")
		if code == 0 || !strings.Contains(errs, "--spark-remote") {
			t.Fatalf("no remote: exit %d: %s", code, errs)
		}
	})
	rem := remote(t)
	t.Run("old-iceberg", func(t *testing.T) {
		defer func(o func(context.Context, pushdown.Settings, *catalog.Catalog) (pushdown.Engine, error)) {
			pushdown.Open = o
		}(pushdown.Open)
		pushdown.Open = func(ctx context.Context, s pushdown.Settings, cat *catalog.Catalog) (pushdown.Engine, error) {
			e, err := OpenEngine(ctx, s, cat)
			if e != nil {
				e.noStamp = true
			}
			return e, err
		}
		_, errs, code := w.try("sync", "ns.src", "ns.out", "--key", "id", "--engine", "spark", "--spark-remote", rem)
		if code == 0 || !strings.Contains(errs, "older than 1.11") || !strings.Contains(errs, rem) {
			t.Fatalf("exit %d: %s", code, errs)
		}
		unchanged(t, "old iceberg")
		for _, r := range w.refs("ns.out") {
			if strings.HasPrefix(r, stagePrefix) {
				t.Fatalf("the refused build left its staging branch %s", r)
			}
		}
	})
	t.Run("catalog-mismatch", func(t *testing.T) {
		other := newWH(t)
		other.run("namespace", "create", "ns")
		other.run("table", "create", "ns.out", "--schema", "id long not null, status string, amount double", "--identifier", "id")
		other.run("table", "append", "ns.out", other.file("x.jsonl", row(9, "x", 9)))
		cfg := filepath.Join(w.dir, "floe-spark.yaml")
		text := fmt.Sprintf("spark:\n  catalog: floe\n  conf:\n    spark.sql.catalog.floe: org.apache.iceberg.spark.SparkCatalog\n    spark.sql.catalog.floe.type: jdbc\n"+
			"    spark.sql.catalog.floe.uri: jdbc:sqlite:%s/catalog.db\n    spark.sql.catalog.floe.jdbc.schema-version: V1\n    spark.sql.catalog.floe.warehouse: file://%s\n    spark.sql.catalog.floe.cache-enabled: 'false'\n", other.dir, other.dir)
		if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, errs, code := w.try("--config", cfg, "sync", "ns.src", "ns.out", "--key", "id", "--engine", "spark", "--spark-remote", rem)
		if code == 0 || !strings.Contains(errs, "catalog") {
			t.Fatalf("exit %d: %s", code, errs)
		}
		unchanged(t, "catalog mismatch")
	})
	t.Run("spark-error", func(t *testing.T) {
		_, errs, code := w.try("merge", "MERGE INTO ns.out t USING ns.src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET status = s.nosuch",
			"--engine", "spark", "--spark-remote", rem)
		if code == 0 || !strings.Contains(errs, "MERGE INTO") || !strings.Contains(errs, "nothing was committed") || !strings.Contains(errs, rem) {
			t.Fatalf("exit %d: %s", code, errs)
		}
		unchanged(t, "spark error")
		for _, r := range w.refs("ns.out") {
			if strings.HasPrefix(r, stagePrefix) {
				t.Fatalf("the failed build left its staging branch %s", r)
			}
		}
	})
}
