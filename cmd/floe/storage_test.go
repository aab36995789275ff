package main_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/floedata/floe/internal/objstoretest"
	"github.com/floedata/floe/internal/testbin"
)

// storageStep is one floe command of the object storage sequence. {DELTA}
// in args is the folder (or bucket prefix) of the shared Delta tables.
type storageStep struct {
	args    string
	compare bool   // compare the output (sorted lines) with local disk
	fail    string // the command must fail with this in its error
}

// storageSteps is a representative sequence of every command kind: Iceberg
// tables in every layout (copy-on-write, position deletes, deletion
// vectors, equality deletes), changelogs, apply, MERGE INTO, sync, Delta
// changes and sync, and a pipeline with every transform type.
var storageSteps = []storageStep{
	{args: "namespace create shop"},
	{args: `table create shop.cow --schema "id long not null, status string, amount double" --identifier id --partition-by "bucket(4, id)"`},
	{args: `table create shop.pos --schema "id long not null, status string, amount double" --identifier id --property write.delete.mode=merge-on-read --property write.update.mode=merge-on-read`},
	{args: `table create shop.dv --schema "id long not null, status string, amount double" --identifier id --format-version 3 --property write.delete.mode=merge-on-read --property write.update.mode=merge-on-read`},
	{args: `table create shop.eq --schema "id long not null, status string, amount double" --identifier id --property write.merge.mode=merge-on-read`},
	{args: "table append shop.cow orders.csv"},
	{args: "table append shop.pos orders.csv"},
	{args: "table append shop.dv orders.csv"},
	{args: "table append shop.eq orders.csv"},
	{args: `table delete shop.cow --where "id = 2"`},
	{args: `table delete shop.pos --where "id = 2"`},
	{args: `table delete shop.dv --where "id = 2"`},
	{args: `table update shop.cow --set "amount = amount * 2" --where "status = 'open'"`},
	{args: `table update shop.pos --set "amount = amount * 2" --where "status = 'open'"`},
	{args: `table update shop.dv --set "amount = amount * 2" --where "status = 'open'"`},
	{args: `table overwrite shop.cow more.csv --where "id >= 4"`},
	{args: "apply shop.eq --changes cdc.jsonl --key id --sequence-column seq --delete-mode equality"},
	{args: "apply shop.pos --changes upserts.jsonl --key id"},
	{args: "table scan shop.cow --format jsonl", compare: true},
	{args: "table scan shop.pos --format jsonl", compare: true},
	{args: "table scan shop.dv --format jsonl", compare: true},
	{args: "table scan shop.eq --format jsonl", compare: true},
	{args: `table scan shop.pos --where "amount > 15" --columns id,amount --format csv`, compare: true},
	{args: "changelog shop.cow --identifier-columns id --format jsonl", compare: true},
	{args: "changelog shop.pos --format jsonl", compare: true},
	{args: "changelog shop.dv --net-changes --format jsonl", compare: true},
	{args: "changelog shop.eq --per-key latest --format jsonl", compare: true},
	{args: "changelog shop.pos --per-key latest --output latest.parquet"},
	{args: `table create shop.merged --schema "id long not null, status string, amount double" --identifier id --property write.merge.mode=merge-on-read`},
	{args: `merge "MERGE INTO shop.merged t USING 'latest.parquet' s ON t.id = s.id WHEN MATCHED AND s._change_type = 'DELETE' THEN DELETE WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED AND s._change_type <> 'DELETE' THEN INSERT *"`},
	{args: "table scan shop.merged --format jsonl", compare: true},
	{args: `sync shop.pos shop.active --key id --filter "status = 'open'" --columns id,amount`},
	{args: "table scan shop.active --format jsonl", compare: true},
	{args: "table compact shop.pos"},
	{args: "table scan shop.pos --format jsonl", compare: true},
	{args: "table branch create shop.cow audit"},
	{args: `table delete shop.cow --where "id = 1" --branch audit`},
	{args: "table scan shop.cow --ref audit --format jsonl", compare: true},
	{args: "table branch list shop.cow --format csv"},
	{args: "table describe shop.dv"},
	{args: "delta changes {DELTA}/deltars-cdf-table --start-version 0 --format jsonl", compare: true},
	{args: "delta changes {DELTA}/deltars-checkpoint-cdf-table --start-version 4 --format jsonl", compare: true},
	{args: "delta changes {DELTA}/kernelrs-cdf-table-with-dv --start-version 0 --format jsonl", compare: true},
	{args: "delta sync {DELTA}/deltars-cdf-table shop.people --equality-columns id --start-version 0 --end-version 1"},
	{args: "delta sync {DELTA}/deltars-cdf-table shop.people"},
	{args: "table scan shop.people --format jsonl", compare: true},
	{args: "delta sync {DELTA}/deltars-cdf-table-with-cdc-and-dvs shop.dvs --equality-columns id --mode merge-on-read"},
	{args: "table scan shop.dvs --format jsonl", compare: true},
	{args: "run shop.yaml --once --quiet"},
	{args: "table scan shop.p_sync --format jsonl", compare: true},
	{args: "table scan shop.p_filter --format jsonl", compare: true},
	{args: "table scan shop.p_merge --format jsonl", compare: true},
	{args: "table scan shop.p_delta --format jsonl", compare: true},
	{args: `table append shop.pos more.csv`},
	{args: "run shop.yaml --once --quiet"},
	{args: "table scan shop.p_sync --format jsonl", compare: true},
	{args: "status shop.yaml --format jsonl"},
	{args: "table remove-orphans shop.cow --older-than 0s --dry-run --quiet"},
}

var storageFiles = map[string]string{
	"orders.csv": "id,status,amount\n1,open,10\n2,open,20\n3,closed,30\n",
	"more.csv":   "id,status,amount\n4,open,40\n5,closed,50\n",
	"cdc.jsonl": `{"id":1,"status":"closed","amount":11,"_change_type":"UPDATE_AFTER","seq":1}
{"id":3,"status":"open","amount":33,"_change_type":"UPDATE_AFTER","seq":2}
{"id":6,"status":"open","amount":60,"_change_type":"INSERT","seq":3}
{"id":6,"status":null,"amount":null,"_change_type":"DELETE","seq":4}
{"id":7,"status":"open","amount":70,"_change_type":"INSERT","seq":5}
{"id":2,"status":null,"amount":null,"_change_type":"DELETE","seq":6}
`,
	"upserts.jsonl": `{"id":1,"status":"closed","amount":11,"_change_type":"UPDATE_AFTER"}
{"id":3,"status":"open","amount":33,"_change_type":"UPDATE_AFTER"}
{"id":7,"status":"open","amount":70,"_change_type":"INSERT"}
`,
	"shop.yaml": `transforms:
  - name: p_sync
    type: sync
    source: shop.pos
    destination: shop.p_sync
    key: [id]
    filter: "status = 'open'"
  - name: p_filter
    type: filter
    source: shop.cow
    destination: shop.p_filter
    filter: "amount > 15"
  - name: p_merge
    type: merge
    source: shop.eq
    destination: shop.p_merge
    key: [id]
    statement: "MERGE INTO {destination} t USING {changes} s ON t.id = s.id WHEN MATCHED AND s._change_type = 'DELETE' THEN DELETE WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED AND s._change_type <> 'DELETE' THEN INSERT *"
  - name: p_delta
    type: delta
    path: {DELTA}/deltars-cdf-table-non-partitioned
    destination: shop.p_delta
    equality_columns: [id, name]
`,
}

var (
	storageNoise = []*regexp.Regexp{snapshotID, isoTime, uuidRe, epochMs}
	s3Loc        = regexp.MustCompile(`(s3|gs)://[^\s"',]*`)
	fileLoc      = regexp.MustCompile(`file://[^\s"',]*|/tmp/[^\s"',]*`)
)

func normalizeStorage(out string) string {
	for _, re := range storageNoise {
		out = re.ReplaceAllString(out, "<X>")
	}
	out = s3Loc.ReplaceAllString(out, "<LOC>")
	out = fileLoc.ReplaceAllString(out, "<LOC>")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// storageRun runs the sequence in work with the given global flags, Delta
// root and environment, and returns the outputs of the compared steps.
func storageRun(t *testing.T, steps []storageStep, work string, global []string, deltaRoot string, env []string) []string {
	t.Helper()
	for name, content := range storageFiles {
		if err := os.WriteFile(filepath.Join(work, name), []byte(strings.ReplaceAll(content, "{DELTA}", deltaRoot)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var outs []string
	for _, st := range steps {
		args, err := splitArgs(strings.ReplaceAll(st.args, "{DELTA}", deltaRoot))
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(floeBin, append(append([]string{}, global...), args...)...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), env...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err = cmd.Run()
		switch {
		case st.fail != "":
			if err == nil || !strings.Contains(stderr.String(), st.fail) {
				t.Fatalf("floe %s: want a failure with %q, got %v: %s", st.args, st.fail, err, stderr.String())
			}
		case err != nil:
			t.Fatalf("floe %s %s: %v\nstdout: %s\nstderr: %s", strings.Join(global, " "), st.args, err, stdout.String(), stderr.String())
		}
		if st.compare {
			outs = append(outs, normalizeStorage(stdout.String()))
		}
	}
	return outs
}

// TestObjectStorage runs every command kind with the warehouse and the Delta
// tables on s3:// (s3proxy, through the counting proxy), through the SQLite
// catalog, and checks each result equals the same sequence on local disk.
func TestObjectStorage(t *testing.T) {
	shared := sharedDelta(t)
	srv := objstoretest.StartS3(t)
	srv.CreateBucket(t, "floe-e2e")
	for _, tbl := range []string{"deltars-cdf-table", "deltars-checkpoint-cdf-table", "kernelrs-cdf-table-with-dv", "deltars-cdf-table-with-cdc-and-dvs", "deltars-cdf-table-non-partitioned"} {
		srv.Upload(t, filepath.Join(shared, tbl), "floe-e2e", "delta/"+tbl)
	}
	px := objstoretest.NewProxy(t, srv.Endpoint)

	local := storageRun(t, storageSteps, t.TempDir(), []string{"--warehouse", "wh"}, shared, nil)

	work := t.TempDir()
	cfg := s3Config(filepath.Join(work, "catalog.db"), "s3://floe-e2e/wh", px.URL, srv)
	if err := os.WriteFile(filepath.Join(work, "floe.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	px.Counts()
	remote := storageRun(t, storageSteps, work, []string{"--config", "floe.yaml", "--catalog", "lake"}, "s3://floe-e2e/delta", []string{"AWS_EC2_METADATA_DISABLED=true"})
	counts := px.Counts()
	if len(local) != len(remote) {
		t.Fatalf("%d outputs on local disk, %d on s3", len(local), len(remote))
	}
	for i := range local {
		if local[i] != remote[i] {
			t.Errorf("output %d differs:\nlocal:\n%s\ns3:\n%s", i, local[i], remote[i])
		}
		if local[i] == "" {
			t.Errorf("output %d is empty", i)
		}
	}
	t.Logf("s3 sequence of %d commands: %v", len(storageSteps), counts)
	// A storage profile instead of a catalog's settings (no --catalog).
	profile := fmt.Sprintf("storage:\n  deltalake:\n    s3.endpoint: %s\n    s3.access-key-id: %s\n    s3.secret-access-key: %s\n    s3.region: %s\n",
		px.URL, srv.AccessKey, srv.SecretKey, srv.Region)
	if err := os.WriteFile(filepath.Join(work, "profile.yaml"), []byte(profile), 0o644); err != nil {
		t.Fatal(err)
	}
	step := []storageStep{{args: "delta changes {DELTA}/deltars-cdf-table --start-version 0 --format jsonl", compare: true}}
	want := storageRun(t, step, t.TempDir(), nil, shared, nil)
	got := storageRun(t, []storageStep{{args: "delta changes {DELTA}/deltars-cdf-table --storage deltalake --start-version 0 --format jsonl", compare: true}},
		work, []string{"--config", "profile.yaml"}, "s3://floe-e2e/delta", []string{"AWS_EC2_METADATA_DISABLED=true"})
	if want[0] != got[0] || want[0] == "" {
		t.Errorf("delta changes with --storage differs from local disk:\nlocal:\n%s\ns3:\n%s", want[0], got[0])
	}
	// A SQL query and a sql transform read delta."s3://..." with that
	// profile while the warehouse stays on local disk (the embedded
	// default): storage and --storage name it.
	sqlRun := func(dir, deltaRoot, storage string, global []string, env []string) []string {
		t.Helper()
		pipe := "transforms:\n  - name: s_delta\n    type: sql\n    destination: shop.s_delta\n    key: [id]\n" +
			"    query: SELECT id, upper(name) AS name, birthday FROM delta.\"" + deltaRoot + "/deltars-cdf-table\" WHERE id > 1\n"
		flags := ""
		if storage != "" {
			pipe += "    storage: " + storage + "\n"
			flags = " --storage " + storage
		}
		if err := os.WriteFile(filepath.Join(dir, "sql.yaml"), []byte(pipe), 0o644); err != nil {
			t.Fatal(err)
		}
		return storageRun(t, []storageStep{
			{args: `query 'SELECT id, name, birthday FROM delta."{DELTA}/deltars-cdf-table" ORDER BY id' --format csv` + flags, compare: true},
			{args: "--warehouse wh run sql.yaml --once --quiet"},
			{args: "--warehouse wh table scan shop.s_delta --format jsonl", compare: true},
		}, dir, global, deltaRoot, env)
	}
	want = sqlRun(t.TempDir(), shared, "", nil, nil)
	got = sqlRun(work, "s3://floe-e2e/delta", "deltalake", []string{"--config", "profile.yaml"}, []string{"AWS_EC2_METADATA_DISABLED=true"})
	for i := range want {
		if want[i] != got[i] || want[i] == "" {
			t.Errorf("sql over a Delta table on s3 with a storage profile, output %d differs from local disk:\nlocal:\n%s\ns3:\n%s", i, want[i], got[i])
		}
	}
	if objs := srv.List(t, "floe-e2e", "wh/shop.db/cow/metadata/"); len(objs) == 0 {
		t.Fatal("no metadata under s3://floe-e2e/wh/shop.db/cow: the tables are not on S3")
	}
}

func sharedDelta(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "..", "shared", "testdata", "delta"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("shared Delta tables not found at %s", dir)
	}
	return dir
}

func s3Config(catalogDB, warehouse, endpoint string, srv *objstoretest.S3) string {
	return fmt.Sprintf(`catalog:
  lake:
    type: sql
    uri: %s
    warehouse: %s
    s3.endpoint: %s
    s3.access-key-id: %s
    s3.secret-access-key: %s
    s3.region: %s
    s3.path-style-access: true
`, catalogDB, warehouse, endpoint, srv.AccessKey, srv.SecretKey, srv.Region)
}

func splitArgs(s string) ([]string, error) { return testbin.SplitArgs(s) }

// gcsSteps: a Delta table on gs:// synced into an Iceberg table whose
// warehouse is on gs://, and a pipeline (delta and sync steps) there.
var gcsSteps = []storageStep{
	{args: "namespace create shop"},
	{args: "delta changes {DELTA}/deltars-cdf-table --start-version 0 --format jsonl", compare: true},
	{args: "delta sync {DELTA}/deltars-cdf-table shop.people --equality-columns id --start-version 0 --end-version 1"},
	{args: "delta sync {DELTA}/deltars-cdf-table shop.people"},
	{args: "table scan shop.people --format jsonl", compare: true},
	{args: "changelog shop.people --format jsonl", compare: true},
	{args: "run gcs.yaml --once --quiet"},
	{args: "table scan shop.g_delta --format jsonl", compare: true},
	{args: "table scan shop.g_sync --format jsonl", compare: true},
}

func init() {
	storageFiles["gcs.yaml"] = `transforms:
  - name: g_delta
    type: delta
    path: {DELTA}/deltars-cdf-table-non-partitioned
    destination: shop.g_delta
    equality_columns: [id, name]
  - name: g_sync
    type: sync
    source: shop.g_delta
    destination: shop.g_sync
    key: [id, name]
`
}

// TestGCSStorage runs gcsSteps with the warehouse and the Delta tables on
// gs:// (fake-gcs-server) and compares with local disk.
func TestGCSStorage(t *testing.T) {
	shared := sharedDelta(t)
	g := objstoretest.StartGCS(t)
	g.CreateBucket(t, "floe-gcs")
	for _, tbl := range []string{"deltars-cdf-table", "deltars-cdf-table-non-partitioned"} {
		g.Upload(t, filepath.Join(shared, tbl), "floe-gcs", "delta/"+tbl)
	}
	local := storageRun(t, gcsSteps, t.TempDir(), []string{"--warehouse", "wh"}, shared, nil)
	work := t.TempDir()
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "catalog:\n  lake:\n    type: sql\n    uri: %s\n    warehouse: gs://floe-gcs/wh\n", filepath.Join(work, "catalog.db"))
	for k, v := range g.Props() {
		fmt.Fprintf(&cfg, "    %s: %q\n", k, v)
	}
	if err := os.WriteFile(filepath.Join(work, "floe.yaml"), []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	remote := storageRun(t, gcsSteps, work, []string{"--config", "floe.yaml", "--catalog", "lake"}, "gs://floe-gcs/delta", nil)
	for i := range local {
		if local[i] != remote[i] || local[i] == "" {
			t.Errorf("output %d differs:\nlocal:\n%s\ngs:\n%s", i, local[i], remote[i])
		}
	}
	if objs := g.List(t, "floe-gcs", "wh/shop.db/g_sync/metadata/"); len(objs) == 0 {
		t.Fatal("no metadata under gs://floe-gcs/wh/shop.db/g_sync: the tables are not on GCS")
	}
}

// TestAzureStorage runs gcsSteps with the warehouse and the Delta tables on
// abfs:// (Azurite, through floe's Azure IO) and compares with local disk.
func TestAzureStorage(t *testing.T) {
	shared := sharedDelta(t)
	az := objstoretest.StartAzurite(t)
	az.CreateContainer(t, "floe-az")
	for _, tbl := range []string{"deltars-cdf-table", "deltars-cdf-table-non-partitioned"} {
		az.Upload(t, filepath.Join(shared, tbl), "floe-az", "delta/"+tbl)
	}
	local := storageRun(t, gcsSteps, t.TempDir(), []string{"--warehouse", "wh"}, shared, nil)
	work := t.TempDir()
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "catalog:\n  lake:\n    type: sql\n    uri: %s\n    warehouse: %s\n", filepath.Join(work, "catalog.db"), az.Location("floe-az", "wh"))
	for k, v := range az.Props() {
		fmt.Fprintf(&cfg, "    %s: %q\n", k, v)
	}
	if err := os.WriteFile(filepath.Join(work, "floe.yaml"), []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	remote := storageRun(t, gcsSteps, work, []string{"--config", "floe.yaml", "--catalog", "lake"}, az.Location("floe-az", "delta"), nil)
	for i := range local {
		if local[i] != remote[i] || local[i] == "" {
			t.Errorf("output %d differs:\nlocal:\n%s\nabfs:\n%s", i, local[i], remote[i])
		}
	}
	if objs := az.List(t, "floe-az", "wh/shop.db/g_sync/metadata/"); len(objs) == 0 {
		t.Fatal("no metadata under wh/shop.db/g_sync on Azurite: the tables are not on Azure storage")
	}
}
