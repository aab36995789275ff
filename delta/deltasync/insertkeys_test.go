package deltasync

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/delta"
	"github.com/floedata/floe/merge"
)

// TestSyncInsertOfLiveKey: a Delta commit that inserts a key an earlier
// commit left in the table (Delta has no primary key: it then holds two
// rows with that key) is a duplicate key, in every delete mode, whether
// the earlier commit was synced before or is in the same batch; floe used
// to upsert it, keeping one of the two rows silently. Nothing is
// committed. Inserts of keys deleted earlier, or in the same commit, and
// updates that move a key to a free one still apply.
func TestSyncInsertOfLiveKey(t *testing.T) {
	ctx := context.Background()
	ident := table.Identifier{"db", "people"}
	modes := []struct {
		name string
		mode merge.DeleteMode
	}{{"auto", merge.DeleteAuto}, {"position", merge.DeletePosition}, {"equality", merge.DeleteEquality}}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			t.Run("key synced before", func(t *testing.T) {
				g := newGen(t, peopleSchema, "")
				g.commit("WRITE", actions(g.data(row{"id": 1, "name": "a"}, row{"id": 2, "name": "b"}))...) // v1
				src := g.open()
				cat := openCatalog(t)
				syncTo(t, cat, ident, src, Options{EqualityColumns: []string{"id"}, Start: delta.AtVersion(1), DeleteMode: m.mode}, 1)
				g.commit("WRITE", actions(g.data(row{"id": 3, "name": "c"}, row{"id": 2, "name": "again"}))...) // v2
				before := tableState(t, cat, ident)
				_, err := Sync(ctx, cat, g.open(), ident, Options{DeleteMode: m.mode})
				if !errors.Is(err, ErrDuplicateKey) || !errors.Is(err, merge.ErrCardinality) ||
					!strings.Contains(err.Error(), "id=2") || !strings.Contains(err.Error(), "versions 2 to 2") {
					t.Fatalf("got %v, want a duplicate key naming id=2 and the versions", err)
				}
				t.Log(err)
				if tableState(t, cat, ident) != before {
					t.Fatal("a refused run committed")
				}
			})
			t.Run("key inserted earlier in the batch", func(t *testing.T) {
				g := newGen(t, peopleSchema, "")
				g.commit("WRITE", actions(g.data(row{"id": 1, "name": "a"}))...) // v1
				src := g.open()
				cat := openCatalog(t)
				syncTo(t, cat, ident, src, Options{EqualityColumns: []string{"id"}, Start: delta.AtVersion(1), DeleteMode: m.mode}, 1)
				g.commit("WRITE", actions(g.data(row{"id": 5, "name": "x"}))...) // v2
				g.commit("WRITE", actions(g.data(row{"id": 5, "name": "y"}))...) // v3
				before := tableState(t, cat, ident)
				_, err := Sync(ctx, cat, g.open(), ident, Options{DeleteMode: m.mode})
				if !errors.Is(err, ErrDuplicateKey) || !errors.Is(err, merge.ErrCardinality) ||
					!strings.Contains(err.Error(), "id=5") || !strings.Contains(err.Error(), "_commit_version 3 after INSERT at 2") {
					t.Fatalf("got %v, want a duplicate key naming id=5 and both versions", err)
				}
				if tableState(t, cat, ident) != before {
					t.Fatal("a refused run committed")
				}
			})
			t.Run("update onto a live key", func(t *testing.T) {
				g := newGen(t, peopleSchema, "")
				v1 := g.data(row{"id": 1, "name": "a"}, row{"id": 2, "name": "b"})
				g.commit("WRITE", actions(v1)...) // v1
				src := g.open()
				cat := openCatalog(t)
				syncTo(t, cat, ident, src, Options{EqualityColumns: []string{"id"}, Start: delta.AtVersion(1), DeleteMode: m.mode}, 1)
				// UPDATE SET id = 2 WHERE id = 1: Delta then holds two rows with id 2.
				g.commit("UPDATE", actions(remove(v1[0]), g.data(row{"id": 2, "name": "a"}, row{"id": 2, "name": "b"}), g.cdc(
					row{"id": 1, "name": "a", "_change_type": "update_preimage"},
					row{"id": 2, "name": "a", "_change_type": "update_postimage"}))...)
				before := tableState(t, cat, ident)
				_, err := Sync(ctx, cat, g.open(), ident, Options{DeleteMode: m.mode})
				if !errors.Is(err, ErrDuplicateKey) || !strings.Contains(err.Error(), "id=2") {
					t.Fatalf("got %v, want a duplicate key naming id=2", err)
				}
				if tableState(t, cat, ident) != before {
					t.Fatal("a refused run committed")
				}
			})
			t.Run("legitimate reinserts", func(t *testing.T) {
				g := newGen(t, peopleSchema, "")
				v1 := g.data(row{"id": 1, "name": "a"}, row{"id": 2, "name": "b"}, row{"id": 3, "name": "c"})
				g.commit("WRITE", actions(v1)...) // v1
				src := g.open()
				cat := openCatalog(t)
				syncTo(t, cat, ident, src, Options{EqualityColumns: []string{"id"}, Start: delta.AtVersion(1), DeleteMode: m.mode}, 1)
				// v2: DELETE WHERE id = 1 (copy-on-write: the file is rewritten).
				v2 := g.data(row{"id": 2, "name": "b"}, row{"id": 3, "name": "c"})
				g.commit("DELETE", actions(remove(v1[0]), v2, g.cdc(row{"id": 1, "name": "a", "_change_type": "delete"}))...)
				// v3: INSERT id = 1 again, after its delete in the same batch.
				g.commit("WRITE", actions(g.data(row{"id": 1, "name": "a2"}))...)
				// v4: an overwrite without change data files: every row deleted
				// and inserted again in one commit.
				v4 := g.data(row{"id": 2, "name": "b4"}, row{"id": 3, "name": "c4"})
				g.commit("WRITE", actions(remove(v2[0]), v4)...)
				// v5: UPDATE SET id = 7 WHERE id = 3 (a free key).
				g.commit("UPDATE", actions(remove(v4[0]), g.data(row{"id": 2, "name": "b4"}, row{"id": 7, "name": "c4"}), g.cdc(
					row{"id": 3, "name": "c4", "_change_type": "update_preimage"},
					row{"id": 7, "name": "c4", "_change_type": "update_postimage"}))...)
				syncTo(t, cat, ident, g.open(), Options{DeleteMode: m.mode}, 5)
				// The same, one commit at a time.
				cat = openCatalog(t)
				syncTo(t, cat, ident, src, Options{EqualityColumns: []string{"id"}, Start: delta.AtVersion(1), DeleteMode: m.mode}, 1)
				for v := int64(2); v <= 5; v++ {
					syncTo(t, cat, ident, g.open(), Options{DeleteMode: m.mode}, v)
				}
			})
		})
	}
}
