package catalog

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// TestCommitCached checks floe's own commit on the embedded catalog (a
// table it holds parsed at the current location): the catalog row moves
// to the next metadata version, another catalog on the same file reads the
// change, gzip-compressed metadata works, and a commit by another writer
// between floe's write of the new metadata and its catalog update fails
// the commit with table.ErrCommitFailed and leaves the other writer's
// state in place.
func TestCommitCached(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, err := Open(ctx, Options{Warehouse: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ident := table.Identifier{"ns", "t"}
	if err := a.CreateNamespace(ctx, ident[:1], false); err != nil {
		t.Fatal(err)
	}
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	if _, err := a.Iceberg().CreateTable(ctx, ident, sc); err != nil {
		t.Fatal(err)
	}
	hooked := 0
	testHookBeforeUpdate = func() { hooked++ }
	defer func() { testHookBeforeUpdate = nil }()
	set := func(c *Catalog, props iceberg.Properties) (*table.Table, *table.Table, error) {
		t.Helper()
		tbl, err := c.Load(ctx, ident)
		if err != nil {
			t.Fatal(err)
		}
		tx := tbl.NewTransaction()
		if err := tx.SetProperties(props); err != nil {
			t.Fatal(err)
		}
		after, err := tx.Commit(ctx)
		return tbl, after, err
	}
	before, after, err := set(a, iceberg.Properties{"k": "1", table.MetadataCompressionKey: table.MetadataCompressionCodecGzip})
	if err != nil {
		t.Fatal(err)
	}
	if hooked != 1 {
		t.Fatalf("the commit of a loaded table went through iceberg-go's CommitTable (hook ran %d times)", hooked)
	}
	if got, want := metadataVersion(after.MetadataLocation()), metadataVersion(before.MetadataLocation())+1; got != want {
		t.Fatalf("new metadata %s: version %d, want %d", after.MetadataLocation(), got, want)
	}
	if !strings.HasSuffix(after.MetadataLocation(), ".gz.metadata.json") {
		t.Fatalf("new metadata %s: want gzip-compressed", after.MetadataLocation())
	}
	var prev string
	if err := a.db.QueryRowContext(ctx, `SELECT previous_metadata_location FROM iceberg_tables WHERE table_name = 't'`).Scan(&prev); err != nil {
		t.Fatal(err)
	}
	if prev != before.MetadataLocation() {
		t.Fatalf("previous_metadata_location %q, want %q", prev, before.MetadataLocation())
	}

	b, err := Open(ctx, Options{Warehouse: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	tb, err := b.Load(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if tb.MetadataLocation() != after.MetadataLocation() || tb.Properties()["k"] != "1" {
		t.Fatalf("another catalog loads %s with k=%q, want %s with k=1", tb.MetadataLocation(), tb.Properties()["k"], after.MetadataLocation())
	}
	// a's next load returns the committed metadata without parsing it, and
	// it is what parsing the written file gives.
	ta, err := a.Load(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if ta2, _ := a.Load(ctx, ident); ta2 != ta {
		t.Fatal("a second load after the commit parsed the metadata again")
	}
	if ta.MetadataLocation() != after.MetadataLocation() || !ta.Metadata().Equals(tb.Metadata()) {
		t.Fatalf("a's table after its commit (%s) differs from the parsed metadata file (%s)", ta.MetadataLocation(), tb.MetadataLocation())
	}

	// A commit by b lands while a's commit is between its metadata write
	// and its catalog update.
	var theirs *table.Table
	testHookBeforeUpdate = func() {
		testHookBeforeUpdate = nil
		if _, theirs, err = set(b, iceberg.Properties{"k": "theirs"}); err != nil {
			t.Error(err)
		}
	}
	if _, _, err := set(a, iceberg.Properties{"k": "2"}); !errors.Is(err, table.ErrCommitFailed) {
		t.Fatalf("commit racing another writer: %v, want table.ErrCommitFailed", err)
	}
	if theirs == nil {
		t.Fatal("the concurrent commit did not run")
	}
	got, err := a.Load(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if got.MetadataLocation() != theirs.MetadataLocation() || got.Properties()["k"] != "theirs" {
		t.Fatalf("after the failed commit: %s with k=%q, want the other writer's %s with k=theirs", got.MetadataLocation(), got.Properties()["k"], theirs.MetadataLocation())
	}
}
