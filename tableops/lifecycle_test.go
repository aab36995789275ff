package tableops_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/internal/ddl"
	"github.com/floedata/floe/internal/state"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/tableops"
)

func appendRows(t *testing.T, e *tabletest.Env, name, branch string, rows [][]any) int64 {
	t.Helper()
	tbl := e.Load(name)
	o, err := tableops.Append(e.Ctx, e.Target(name, branch), tabletest.Seq(tabletest.ArrowSchema(tbl), rows))
	if err != nil {
		t.Fatal(err)
	}
	return o.SnapshotID
}

func setProps(t *testing.T, e *tabletest.Env, name string, p iceberg.Properties) {
	t.Helper()
	if _, err := tableops.SetProperties(e.Ctx, e.Cat, table.Identifier{"ns", name}, p); err != nil {
		t.Fatal(err)
	}
}

// TestHolds finds the watermarks other tables hold on a source: floe's
// build state naming it (on main and on a branch), a bare watermark (as the
// seeds' code leaves it), and not those of a former table of the same name
// or of a watermark no longer in the branch's history.
func TestHolds(t *testing.T) {
	e := tabletest.New(t)
	if _, err := e.Create("src", "id long not null", "", []string{"id"}, nil); err != nil {
		t.Fatal(err)
	}
	s1 := appendRows(t, e, "src", "", [][]any{{int64(1)}})
	s2 := appendRows(t, e, "src", "", [][]any{{int64(2)}})
	s3 := appendRows(t, e, "src", "", [][]any{{int64(3)}})
	// A tag on s1, which a (strange) watermark names as its branch.
	if _, err := tableops.CreateTag(e.Ctx, e.Cat, table.Identifier{"ns", "src"}, "keep", &s1, 0); err != nil {
		t.Fatal(err)
	}
	src := e.Load("src")
	uuid := src.Metadata().TableUUID().String()
	for _, n := range []string{"built", "bare", "stale", "ontag"} {
		if _, err := e.Create(n, "id long", "", nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	in := func(snap int64, uuid, branch string) iceberg.Properties {
		return state.Build{Transform: "t", Inputs: []state.InputState{{Name: "source", Table: "ns.src", UUID: uuid, Branch: branch, Snapshot: itoa(snap)}}}.Properties()
	}
	setProps(t, e, "built", in(s1, uuid, ""))
	setProps(t, e, "bare", iceberg.Properties{state.PropWatermark: itoa(s2)})
	setProps(t, e, "stale", in(s1, "00000000-0000-0000-0000-000000000000", ""))
	setProps(t, e, "ontag", in(s1, uuid, "keep")) // a tag is no branch: its head is the watermark

	holds, err := tableops.Holds(e.Ctx, e.Cat, table.Identifier{"ns", "src"}, src)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]int64{}
	for _, h := range holds {
		got[h.Output] = h.Needs
	}
	want := map[string][]int64{
		"ns.built": {s1, s2, s3},
		"ns.bare":  {s2, s3},
		"ns.ontag": {s1},
	}
	for k, v := range want {
		if !slices.Equal(got[k], v) {
			t.Errorf("%s needs %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
	if _, ok := got["ns.stale"]; ok {
		t.Errorf("a former table's watermark holds snapshots: %v", got)
	}

	// Expiry keeps what they need; --force expires it and names them.
	out, err := tableops.ExpireSnapshots(e.Ctx, e.Cat, table.Identifier{"ns", "src"}, tableops.ExpireOptions{OlderThan: time.Now().Add(time.Hour), RetainLast: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Expired) != 0 || !slices.Equal(out.Kept, []int64{s2}) {
		t.Errorf("expired %v kept %v; want nothing expired, s2 kept (s1 is tagged, s3 the head)", out.Expired, out.Kept)
	}
	out, err = tableops.ExpireSnapshots(e.Ctx, e.Cat, table.Identifier{"ns", "src"}, tableops.ExpireOptions{OlderThan: time.Now().Add(time.Hour), RetainLast: 1, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out.Expired, []int64{s2}) || len(out.Forced) != 2 {
		t.Errorf("forced: expired %v, forced holds %v", out.Expired, out.Forced)
	}
	if e.Load("src").Metadata().SnapshotByID(s2) != nil {
		t.Errorf("s2 is still there")
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestDropPurge drops a table with and without its files, and refuses to
// purge a table registered with a path root.
func TestDropPurge(t *testing.T) {
	e := tabletest.New(t)
	for _, n := range []string{"a", "b"} {
		if _, err := e.Create(n, "id long", "", nil, nil); err != nil {
			t.Fatal(err)
		}
		appendRows(t, e, n, "", [][]any{{int64(1)}})
	}
	locOf := func(n string) string { return strings.TrimPrefix(e.Load(n).Location(), "file://") }
	la, lb := locOf("a"), locOf("b")
	if _, err := tableops.Drop(e.Ctx, e.Cat, table.Identifier{"ns", "a"}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(la, "metadata")); err != nil {
		t.Errorf("drop without purge removed files: %v", err)
	}
	if _, err := tableops.Drop(e.Ctx, e.Cat, table.Identifier{"ns", "b"}, true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(lb); !os.IsNotExist(err) {
		t.Errorf("drop --purge left %s: %v", lb, err)
	}
	// Registered with a path root: never purged.
	meta, _ := filepath.Glob(filepath.Join(la, "metadata", "*.metadata.json"))
	slices.Sort(meta)
	if _, err := e.Cat.Register(e.Ctx, table.Identifier{"ns", "r"}, meta[len(meta)-1], la); err != nil {
		t.Fatal(err)
	}
	if _, err := tableops.Drop(e.Ctx, e.Cat, table.Identifier{"ns", "r"}, true); !errors.Is(err, tableops.ErrRefused) {
		t.Fatalf("purge of a path-root table: %v", err)
	}
	if _, err := tableops.Drop(e.Ctx, e.Cat, table.Identifier{"ns", "r"}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(la, "metadata")); err != nil {
		t.Errorf("the registered table's files went: %v", err)
	}
}

// TestAlterRefusalsCommitNothing: a refused alter leaves the table's
// metadata as it was.
func TestAlterRefusalsCommitNothing(t *testing.T) {
	e := tabletest.New(t)
	if _, err := e.Create("t", "id long not null, a int, ts timestamp", "day(ts)", []string{"id"}, nil); err != nil {
		t.Fatal(err)
	}
	before := e.Load("t").MetadataLocation()
	col := func(s string) ddl.Column {
		c, err := ddl.ParseColumn(s)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for name, a := range map[string]tableops.Alter{
		"required add":      {AddColumns: []ddl.Column{col("x int not null")}},
		"narrowing":         {AlterTypes: []ddl.Column{col("id int")}},
		"string to int":     {AlterTypes: []ddl.Column{col("ts long")}},
		"drop key":          {DropColumns: []string{"id"}},
		"drop spec source":  {DropColumns: []string{"ts"}},
		"optional key":      {SetIdentifier: []string{"a"}},
		"key made nullable": {DropNotNull: []string{"id"}},
		"unknown column":    {RenameColumns: [][2]string{{"nope", "x"}}},
		"unknown field":     {DropPartitionFields: []string{"bucket(3, id)"}},
		"both add and drop": {AddColumns: []ddl.Column{col("a string")}},
	} {
		if _, err := tableops.AlterTable(e.Ctx, e.Cat, table.Identifier{"ns", "t"}, a); !errors.Is(err, tableops.ErrRefused) {
			t.Errorf("%s: want ErrRefused, got %v", name, err)
		}
	}
	if got := e.Load("t").MetadataLocation(); got != before {
		t.Errorf("a refused alter committed: %s -> %s", before, got)
	}
}
