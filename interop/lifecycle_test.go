//go:build interop

package interop_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/floedata/floe/interop"
)

// pyTableState is what PyIceberg sees of a table (lifecyclePy).
type pyTableState struct {
	Exists     bool              `json:"exists"`
	Schema     [][]any           `json:"schema"` // [name, type, required]
	Identifier []string          `json:"identifier"`
	Spec       [][]string        `json:"spec"` // [name, transform]
	Refs       [][]any           `json:"refs"` // [name, type, snapshot id]
	Snapshots  []json.Number     `json:"snapshots"`
	Properties map[string]string `json:"properties"`
	Rows       int               `json:"rows"`
	Tables     []string          `json:"tables"` // of the table's namespace
}

const lifecyclePy = `
from pyiceberg.catalog import load_catalog
cat = load_catalog(args["catalog"]["name"], **args["catalog"]["props"])
ns, name = args["table"].split(".")
result = {"exists": cat.table_exists(args["table"]),
          "tables": sorted(".".join(t) for t in cat.list_tables(ns))}
if result["exists"]:
    t = cat.load_table(args["table"])
    sc = t.schema()
    result["schema"] = [[f.name, str(f.field_type), f.required] for f in sc.fields]
    result["identifier"] = sorted(sc.identifier_field_names())
    result["spec"] = [[f.name, str(f.transform)] for f in t.spec().fields]
    result["refs"] = sorted([[k, r.snapshot_ref_type.value, r.snapshot_id] for k, r in t.metadata.refs.items()])
    result["snapshots"] = sorted(s.snapshot_id for s in t.snapshots())
    result["properties"] = dict(t.properties)
    result["rows"] = t.scan().to_arrow().num_rows
`

func pyState(ctx context.Context, t *testing.T, py *interop.Py, cat interop.CatalogSpec, table string) pyTableState {
	t.Helper()
	raw, err := py.Python(ctx, lifecyclePy, map[string]any{"catalog": cat, "table": table})
	if err != nil {
		t.Fatalf("PyIceberg on %s: %v", table, err)
	}
	var s pyTableState
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("PyIceberg on %s: %v in %s", table, err, raw)
	}
	return s
}

// floeState is what floe's describe prints, the parts compared.
type floeState struct {
	Schema []struct {
		Name     string `json:"name"`
		Type     string `json:"type"`
		Required bool   `json:"required"`
	} `json:"schema"`
	Identifier []string          `json:"identifier_fields"`
	Partition  []string          `json:"partition_spec"`
	Properties map[string]string `json:"properties"`
	Refs       []struct {
		Name       string      `json:"name"`
		Type       string      `json:"type"`
		SnapshotID json.Number `json:"snapshot_id"`
	} `json:"refs"`
}

// TestLifecycleSeenByEngines makes every lifecycle change with floe (schema
// and partition evolution, properties, tags, snapshot expiry, rename, drop,
// purge) and checks after each that Spark and PyIceberg see the table as
// floe made it.
func TestLifecycleSeenByEngines(t *testing.T) {
	spark := interop.SharedSpark(t)
	py := interop.SharedPy(t)
	ctx := testCtx(t)
	wh, err := interop.NewWarehouse(filepath.Join(t.TempDir(), "warehouse"))
	if err != nil {
		t.Fatal(err)
	}
	floe := wh.Floe(t)
	run := func(args ...string) string {
		t.Helper()
		out, err := floe.Run(ctx, args...)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	sess := spark.TestSession(t, wh.SparkConf())
	spq := func(q string) [][]any {
		t.Helper()
		got, err := spark.SQL(ctx, sess, q)
		if err != nil {
			t.Fatalf("Spark %s: %v", q, err)
		}
		return got.Rows
	}
	pyCat := wh.PyIceberg()
	describe := func(tbl string) floeState {
		t.Helper()
		var d floeState
		if err := floe.JSON(ctx, &d, "table", "describe", tbl); err != nil {
			t.Fatal(err)
		}
		return d
	}

	run("namespace", "create", "shop")
	run("table", "create", "shop.t", "--schema", "id long not null, name string, qty int, amount decimal(9,2), legacy string, ts timestamp",
		"--key", "id", "--partition-by", "day(ts)")
	for i, rows := range []string{
		"id,name,qty,amount,legacy,ts\n1,a,1,1.50,x,2024-05-01T10:00:00Z\n2,b,2,2.50,y,2024-05-02T10:00:00Z\n",
		"id,name,qty,amount,legacy,ts\n3,c,3,3.50,z,2024-05-03T10:00:00Z\n",
	} {
		f := filepath.Join(wh.Dir, fmt.Sprintf("in%d.csv", i))
		if err := os.WriteFile(f, []byte(rows), 0o644); err != nil {
			t.Fatal(err)
		}
		run("table", "append", "shop.t", f)
	}

	// Schema evolution.
	run("table", "alter", "shop.t", "--add-column", "note string after name", "--rename-column", "name TO buyer",
		"--alter-type", "qty long", "--alter-type", "amount decimal(12,2)", "--drop-column", "legacy", "--drop-not-null", "ts")
	want := [][]any{{"id", "long", true}, {"buyer", "string", false}, {"note", "string", false}, {"qty", "long", false},
		{"amount", "decimal(12, 2)", false}, {"ts", "timestamptz", false}}
	ps := pyState(ctx, t, py, pyCat, "shop.t")
	if fmt.Sprint(ps.Schema) != fmt.Sprint(want) || !slices.Equal(ps.Identifier, []string{"id"}) || ps.Rows != 3 {
		t.Errorf("PyIceberg sees schema %v, key %v, %d rows; want %v, [id], 3 rows", ps.Schema, ps.Identifier, ps.Rows, want)
	}
	var sparkCols [][]any
	for _, r := range spq("DESCRIBE TABLE floe.shop.t") {
		if name, _ := r[0].(string); name == "" || strings.HasPrefix(name, "#") {
			break
		}
		sparkCols = append(sparkCols, r[:2])
	}
	wantSpark := [][]any{{"id", "bigint"}, {"buyer", "string"}, {"note", "string"}, {"qty", "bigint"}, {"amount", "decimal(12,2)"}, {"ts", "timestamp"}}
	if fmt.Sprint(sparkCols) != fmt.Sprint(wantSpark) {
		t.Errorf("Spark sees columns %v, want %v", sparkCols, wantSpark)
	}
	const read = "SELECT id, buyer, note, qty, CAST(amount AS STRING) FROM floe.shop.t ORDER BY id"
	const wantRows = "[[1 a <nil> 1 1.50] [2 b <nil> 2 2.50] [3 c <nil> 3 3.50]]"
	// NB: Iceberg 1.11's vectorized Parquet reader fails on an int column
	// widened to long when the file's INT32 column carries Parquet's
	// INTEGER(32) annotation, as iceberg-go writes it (a ClassCastException,
	// BigIntVector to IntVector); the row reader and PyIceberg read it.
	// docs/interop.md says so; floe table compact rewrites the files.
	if _, err := spark.SQL(ctx, sess, read); err == nil {
		t.Logf("Spark's vectorized reader now reads the widened column")
	} else if !strings.Contains(err.Error(), "ClassCastException") {
		t.Fatalf("Spark %s: %v", read, err)
	}
	if err := spark.Exec(ctx, sess, "SET spark.sql.iceberg.vectorization.enabled=false"); err != nil {
		t.Fatal(err)
	}
	if got := spq(read); fmt.Sprint(got) != wantRows {
		t.Errorf("Spark (row reader) reads %v after the schema change", got)
	}
	if err := spark.Exec(ctx, sess, "SET spark.sql.iceberg.vectorization.enabled=true"); err != nil {
		t.Fatal(err)
	}
	run("table", "compact", "shop.t")
	if got := spq(read); fmt.Sprint(got) != wantRows {
		t.Errorf("Spark (vectorized) reads %v after floe table compact", got)
	}
	var got [][]any

	// Partition evolution: new data goes to the new spec.
	run("table", "alter", "shop.t", "--add-partition-field", "bucket(4, id)", "--drop-partition-field", "day(ts)")
	f := filepath.Join(wh.Dir, "in2.csv")
	if err := os.WriteFile(f, []byte("id,buyer,qty\n4,d,4\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run("table", "append", "shop.t", f)
	ps = pyState(ctx, t, py, pyCat, "shop.t")
	if fmt.Sprint(ps.Spec) != "[[id_bucket_4 bucket[4]]]" || ps.Rows != 4 {
		t.Errorf("PyIceberg sees spec %v and %d rows, want [[id_bucket_4 bucket[4]]] and 4", ps.Spec, ps.Rows)
	}
	if d := describe("shop.t"); !slices.Equal(d.Partition, []string{"bucket(4, id)"}) {
		t.Errorf("floe describes the spec as %v", d.Partition)
	}
	specs := spq("SELECT DISTINCT spec_id FROM floe.shop.t.files ORDER BY spec_id")
	if len(specs) != 2 {
		t.Errorf("Spark sees data files of specs %v, want the old and the new one", specs)
	}

	// Properties.
	run("table", "properties", "set", "shop.t", "team=data-eng", "commit.retry.num-retries=7")
	run("table", "properties", "unset", "shop.t", "commit.retry.num-retries")
	props := map[string]any{}
	for _, r := range spq("SHOW TBLPROPERTIES floe.shop.t") {
		props[r[0].(string)] = r[1]
	}
	if props["team"] != "data-eng" || props["commit.retry.num-retries"] != nil {
		t.Errorf("Spark sees properties %v", props)
	}
	ps = pyState(ctx, t, py, pyCat, "shop.t")
	if ps.Properties["team"] != "data-eng" || ps.Properties["commit.retry.num-retries"] != "" {
		t.Errorf("PyIceberg sees properties %v", ps.Properties)
	}

	// Tags: a tag keeps its snapshot readable by name.
	run("table", "tag", "create", "shop.t", "v1")
	run("table", "delete", "shop.t", "--where", "id = 1")
	got = spq("SELECT count(*) FROM floe.shop.t VERSION AS OF 'v1'")
	if fmt.Sprint(got) != "[[4]]" {
		t.Errorf("Spark reads %v rows at tag v1, want 4", got)
	}
	refs := spq("SELECT name, type FROM floe.shop.t.refs ORDER BY name")
	if fmt.Sprint(refs) != "[[main BRANCH] [v1 TAG]]" {
		t.Errorf("Spark sees refs %v", refs)
	}
	ps = pyState(ctx, t, py, pyCat, "shop.t")
	var pyRefs []string
	for _, r := range ps.Refs {
		pyRefs = append(pyRefs, fmt.Sprintf("%v:%v", r[0], r[1]))
	}
	if fmt.Sprint(pyRefs) != "[main:branch v1:tag]" {
		t.Errorf("PyIceberg sees refs %v", pyRefs)
	}
	run("table", "tag", "drop", "shop.t", "v1")
	if refs := spq("SELECT name FROM floe.shop.t.refs"); fmt.Sprint(refs) != "[[main]]" {
		t.Errorf("Spark sees refs %v after the tag was dropped", refs)
	}

	// Snapshot expiry: both engines see exactly the snapshots floe kept,
	// and the rows are unchanged.
	var exp struct {
		Expired []json.Number `json:"expired_snapshot_ids"`
	}
	if err := floe.JSON(ctx, &exp, "table", "expire-snapshots", "shop.t", "--older-than", "0s", "--retain-last", "2"); err != nil {
		t.Fatal(err)
	}
	if len(exp.Expired) == 0 {
		t.Fatalf("nothing expired")
	}
	ps = pyState(ctx, t, py, pyCat, "shop.t")
	var sparkSnaps []string
	for _, r := range spq("SELECT CAST(snapshot_id AS STRING) FROM floe.shop.t.snapshots") {
		sparkSnaps = append(sparkSnaps, r[0].(string))
	}
	sort.Strings(sparkSnaps)
	var pySnaps []string
	for _, s := range ps.Snapshots {
		pySnaps = append(pySnaps, s.String())
	}
	sort.Strings(pySnaps)
	if len(pySnaps) != 2 || !slices.Equal(pySnaps, sparkSnaps) {
		t.Errorf("after expiry PyIceberg sees snapshots %v, Spark %v; want the same 2", pySnaps, sparkSnaps)
	}
	for _, id := range exp.Expired {
		if slices.Contains(pySnaps, id.String()) {
			t.Errorf("expired snapshot %s is still there", id)
		}
	}
	if got := spq("SELECT id FROM floe.shop.t ORDER BY id"); fmt.Sprint(got) != "[[2] [3] [4]]" || ps.Rows != 3 {
		t.Errorf("after expiry Spark reads %v, PyIceberg %d rows", got, ps.Rows)
	}

	// Rename and drop.
	run("table", "rename", "shop.t", "shop.t2")
	if got := spq("SHOW TABLES IN floe.shop"); len(got) != 1 || got[0][1] != "t2" {
		t.Errorf("Spark sees tables %v after the rename", got)
	}
	ps = pyState(ctx, t, py, pyCat, "shop.t")
	if ps.Exists || !slices.Equal(ps.Tables, []string{"shop.t2"}) {
		t.Errorf("PyIceberg sees shop.t exists=%v, tables %v after the rename", ps.Exists, ps.Tables)
	}
	if got := spq("SELECT count(*) FROM floe.shop.t2"); fmt.Sprint(got) != "[[3]]" {
		t.Errorf("Spark counts %v rows in the renamed table", got)
	}
	loc := filepath.Join(wh.Dir, "shop.db", "t")
	run("table", "drop", "shop.t2")
	if got := spq("SHOW TABLES IN floe.shop"); len(got) != 0 {
		t.Errorf("Spark sees tables %v after the drop", got)
	}
	if _, err := os.Stat(loc); err != nil {
		t.Errorf("drop without --purge removed the files: %v", err)
	}
	// Purge: a table Spark wrote, dropped by floe with its files.
	if err := spark.Exec(ctx, sess, "CREATE TABLE floe.shop.p (id BIGINT) USING iceberg", "INSERT INTO floe.shop.p VALUES (1), (2)"); err != nil {
		t.Fatal(err)
	}
	run("table", "drop", "shop.p", "--purge")
	if _, err := os.Stat(filepath.Join(wh.Dir, "shop.db", "p")); !os.IsNotExist(err) {
		t.Errorf("drop --purge left the table's folder: %v", err)
	}
	ps = pyState(ctx, t, py, pyCat, "shop.p")
	if ps.Exists || len(ps.Tables) != 0 {
		t.Errorf("PyIceberg sees shop.p exists=%v, tables %v after the purge", ps.Exists, ps.Tables)
	}
	run("namespace", "drop", "shop")
	if got := spq("SHOW NAMESPACES IN floe"); len(got) != 0 {
		t.Errorf("Spark sees namespaces %v after namespace drop", got)
	}
}
