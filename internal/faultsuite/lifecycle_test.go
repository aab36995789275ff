package faultsuite

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/internal/ddl"
	"github.com/floedata/floe/internal/faultcat"
	"github.com/floedata/floe/internal/state"
	"github.com/floedata/floe/internal/transform"
	"github.com/floedata/floe/tableops"
)

// lifecyclePaths are the commit paths of table lifecycle (issue 16):
// properties, schema evolution, tags, snapshot expiry, rename, drop
// --purge, and the rebuild of a sync output whose columns changed.
func lifecyclePaths() []path {
	cowV2 := props("format-version", "2")
	// propState: the rows, the table's format version and the properties
	// the paths change.
	propState := func(e *env, tbl *table.Table) (string, error) {
		rows, err := e.Rows(tbl, scanAt())
		var ps []string
		for _, k := range []string{"owner", "write.delete.mode"} {
			if v, ok := tbl.Properties()[k]; ok {
				ps = append(ps, k+"="+v)
			}
		}
		return fmt.Sprintf("v%d %s %s", tbl.Metadata().Version(), strings.Join(ps, ","), strings.Join(rows, " ")), err
	}
	schemaState := func(e *env, tbl *table.Table) (string, error) {
		rows, err := e.Rows(tbl, scanAt())
		return columns(tbl.Schema()) + " " + strings.Join(rows, " "), err
	}
	// refState: the refs by the position of their snapshot in the
	// table's history (snapshot ids differ between trials), the number
	// of snapshots, and the rows.
	refState := func(e *env, tbl *table.Table) (string, error) {
		snaps := tbl.Metadata().Snapshots()
		sort.Slice(snaps, func(i, j int) bool { return snaps[i].SequenceNumber < snaps[j].SequenceNumber })
		order := map[int64]int64{}
		for _, s := range snaps {
			order[s.SnapshotID] = s.SequenceNumber
		}
		var refs []string
		for n, r := range tbl.Metadata().Refs() {
			refs = append(refs, fmt.Sprintf("%s@%d", n, order[r.SnapshotID]))
		}
		sort.Strings(refs)
		var seqs []string
		for _, s := range snaps {
			seqs = append(seqs, fmt.Sprint(s.SequenceNumber))
		}
		rows, err := e.Rows(tbl, scanAt())
		return fmt.Sprintf("refs=%s snapshots=%s %s", strings.Join(refs, ","), strings.Join(seqs, ","), strings.Join(rows, " ")), err
	}
	// withHistory: ns.t with four snapshots (24 rows, then 40, 41 and a
	// delete of 1..4 that rewrites files), so that expiry removes data
	// files only old snapshots reference.
	withHistory := func(e *env) error {
		if err := seedTable(e, cowV2); err != nil {
			return err
		}
		for _, id := range []int64{40, 41} {
			if _, err := tableops.Append(e.Ctx, e.Target("t", ""), rowsOf([][]any{{id, fmt.Sprint("b", id)}})); err != nil {
				return err
			}
		}
		_, err := tableops.Delete(e.Ctx, e.Target("t", ""), idRange(1, 4))
		return err
	}
	tagAt := func(e *env) error {
		if err := withHistory(e); err != nil {
			return err
		}
		_, err := tableops.CreateTag(e.Ctx, e.Cat, ident, "old", nil, 0)
		return err
	}
	isRefused := func(err error) bool { return errors.Is(err, tableops.ErrRefused) }
	noSuchTable := func(err error) bool { return errors.Is(err, catalog.ErrNoSuchTable) }
	return []path{
		{name: "table properties set", tables: []string{"t"}, state: propState, setup: func(e *env) error { return seedTable(e, cowV2) },
			run: func(e *env) (bool, error) {
				o, err := tableops.SetProperties(e.Ctx, e.Cat, ident, iceberg.Properties{"owner": "ops", "write.delete.mode": "merge-on-read", "format-version": "3"})
				return o != nil && o.AnswerLost, err
			}},
		{name: "table properties unset", tables: []string{"t"}, state: propState,
			setup: func(e *env) error {
				if err := seedTable(e, cowV2); err != nil {
					return err
				}
				_, err := tableops.SetProperties(e.Ctx, e.Cat, ident, iceberg.Properties{"owner": "ops"})
				return err
			},
			rerunOK: func(err error) bool { return err != nil && strings.Contains(err.Error(), `has no property "owner"`) },
			run: func(e *env) (bool, error) {
				o, err := tableops.UnsetProperties(e.Ctx, e.Cat, ident, []string{"owner"}, false)
				return o != nil && o.AnswerLost, err
			}},
		{name: "table alter", tables: []string{"t"}, state: schemaState, setup: func(e *env) error { return seedTable(e, cowV2) },
			rerunOK: isRefused,
			run: func(e *env) (bool, error) {
				col, err := ddl.ParseColumn("note string")
				if err != nil {
					return false, err
				}
				o, err := tableops.AlterTable(e.Ctx, e.Cat, ident, tableops.Alter{AddColumns: []ddl.Column{col}, RenameColumns: [][2]string{{"v", "value"}}})
				return o != nil && o.AnswerLost, err
			}},
		{name: "tag create", tables: []string{"t"}, state: refState, setup: withHistory,
			rerunOK: func(err error) bool { return errors.Is(err, tableops.ErrRefExists) },
			run: func(e *env) (bool, error) {
				o, err := tableops.CreateTag(e.Ctx, e.Cat, ident, "audit", nil, 0)
				return o != nil && o.AnswerLost, err
			}},
		{name: "tag drop", tables: []string{"t"}, state: refState, setup: tagAt,
			rerunOK: func(err error) bool { return errors.Is(err, tableops.ErrNoSuchRef) },
			run: func(e *env) (bool, error) {
				o, err := tableops.DropTag(e.Ctx, e.Cat, ident, "old", false)
				return o != nil && o.AnswerLost, err
			}},
		{name: "expire-snapshots", tables: []string{"t"}, state: refState, setup: withHistory,
			verify: expiredFilesGone,
			run: func(e *env) (bool, error) {
				o, err := tableops.ExpireSnapshots(e.Ctx, e.Cat, ident, tableops.ExpireOptions{OlderThan: time.Now().Add(time.Hour), RetainLast: 1})
				if o != nil && o.CleanupErr != nil {
					e.data["cleanup"] = o.CleanupErr
				}
				return o != nil && o.AnswerLost, err
			}},
		{name: "table rename", tables: []string{"t", "renamed"}, op: faultcat.OpRename, setup: func(e *env) error { return seedTable(e, cowV2) },
			rerunOK: noSuchTable,
			run: func(e *env) (bool, error) {
				o, err := tableops.Rename(e.Ctx, e.Cat, ident, table.Identifier{"ns", "renamed"})
				return o != nil && o.AnswerLost, err
			}},
		{name: "table drop --purge", tables: []string{"t"}, op: faultcat.OpDrop,
			setup: func(e *env) error {
				if err := withHistory(e); err != nil {
					return err
				}
				e.data["location"] = local(e.Load("t").Location())
				return nil
			},
			rerunOK: noSuchTable,
			verify: func(e *env, err error, removeFailed bool) error {
				if err != nil || removeFailed || e.data["cleanup"] != nil {
					return nil
				}
				// Purged: no file of the table is left under its location.
				var left []string
				_ = filepath.WalkDir(e.data["location"].(string), func(p string, d fs.DirEntry, err error) error {
					if err == nil && !d.IsDir() {
						left = append(left, p)
					}
					return nil
				})
				if len(left) > 0 {
					return fmt.Errorf("drop --purge succeeded but left %d files: %v", len(left), left)
				}
				return nil
			},
			run: func(e *env) (bool, error) {
				o, err := tableops.Drop(e.Ctx, e.Cat, ident, true)
				if o != nil && o.PurgeErr != nil {
					e.data["cleanup"] = o.PurgeErr
				}
				return o != nil && o.AnswerLost, err
			}},
		rebuildPath(),
	}
}

// rebuildPath: a sync output whose columns changed (v dropped, a computed
// column added) is rebuilt in one commit: schema, rows and watermark.
func rebuildPath() path {
	tr := func(version int) *transform.Transform {
		return transform.New("proj", func(ctx *transform.Context) error {
			rows, err := ctx.Input("source").Current()
			if err != nil {
				return err
			}
			cols := []string{"id", "v"}
			if version > 1 {
				cols = []string{"id"}
			}
			if rows, err = rows.Select(cols...); err != nil {
				return err
			}
			return ctx.Output("output").Replace(rows)
		}, transform.WithInput("source", "ns.t"), transform.WithOutput("output", "ns.out", transform.Identifier("id"), transform.TableProperties(map[string]string(fast))),
			transform.WithSemanticVersion(version))
	}
	return path{name: "sync rebuild (columns changed)", tables: []string{"out"},
		state: func(e *env, tbl *table.Table) (string, error) {
			rows, err := e.Rows(tbl, scanAt())
			src, lerr := e.Cat.Load(e.Ctx, ident)
			if lerr != nil {
				return "", lerr
			}
			b, _ := state.Read(tbl.Properties())
			atHead := len(b.Inputs) == 1 && b.Inputs[0].Snapshot == fmt.Sprint(src.CurrentSnapshot().SnapshotID)
			return fmt.Sprintf("%s version=%s watermark-at-head=%v %s", columns(tbl.Schema()), tbl.Properties()[state.PropSemanticVersion], atHead, strings.Join(rows, " ")), err
		},
		setup: func(e *env) error {
			if err := seedTable(e, props()); err != nil {
				return err
			}
			_, err := (&transform.Runner{Catalog: e.Cat}).Build(e.Ctx, tr(1))
			return err
		},
		run: func(e *env) (bool, error) {
			_, err := (&transform.Runner{Catalog: e.Cat}).Build(e.Ctx, tr(2))
			return false, err
		}}
}

// expiredFilesGone checks, after a successful expiry (removals not made to
// fail, no clean-up error reported), that the data files only the expired snapshots held are gone and
// that the retained ones are there (checkFiles checks every referenced
// file).
func expiredFilesGone(e *env, err error, removeFailed bool) error {
	if err != nil || removeFailed || e.data["cleanup"] != nil {
		// Files may stay only when floe said so (a failed or unknown
		// change deletes nothing: the suite checks that).
		return nil
	}
	tbl, lerr := e.Cat.Load(e.Ctx, ident)
	if lerr != nil {
		return lerr
	}
	if n := len(tbl.Metadata().Snapshots()); n != 1 {
		return fmt.Errorf("%d snapshots after expiry, want 1", n)
	}
	fsys, ferr := tbl.FS(e.Ctx)
	if ferr != nil {
		return ferr
	}
	live := map[string]bool{}
	mfs, merr := tbl.CurrentSnapshot().Manifests(fsys)
	if merr != nil {
		return merr
	}
	for _, m := range mfs {
		for en, err := range m.Entries(fsys, true) {
			if err != nil {
				return err
			}
			live[local(en.DataFile().FilePath())] = true
		}
	}
	var stale []string
	_ = filepath.WalkDir(filepath.Join(local(tbl.Location()), "data"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".parquet") && !live[p] {
			stale = append(stale, p)
		}
		return nil
	})
	if len(stale) > 0 {
		return fmt.Errorf("expiry succeeded but left %d data files no snapshot references: %v", len(stale), stale)
	}
	return nil
}

func idRange(lo, hi int64) *tableops.Predicate {
	return &tableops.Predicate{Columns: []string{"id"}, Match: func(_ context.Context, rec arrow.RecordBatch) ([]bool, error) {
		ids := rec.Column(0).(*array.Int64)
		out := make([]bool, rec.NumRows())
		for i := range out {
			out[i] = ids.Value(i) >= lo && ids.Value(i) <= hi
		}
		return out, nil
	}}
}

func columns(sc *iceberg.Schema) string {
	var out []string
	for _, f := range sc.Fields() {
		out = append(out, f.Name+":"+ddl.FormatType(f.Type))
	}
	return strings.Join(out, ",")
}

// filesUnder lists the files under the locations of the path's tables.
func filesUnder(t *testing.T, e *env, p path) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, name := range p.tables {
		tbl, err := e.Cat.Load(e.Ctx, table.Identifier{"ns", name})
		if err != nil {
			continue
		}
		_ = filepath.WalkDir(local(tbl.Location()), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				out[p] = true
			}
			return nil
		})
	}
	return out
}

// spyFirst wraps a catalog so that the number of loads inj counted before
// the first call of op lands in *loads.
func spyFirst(inj *faultcat.Injector, op faultcat.Op, loads *int) func(icecat.Catalog) icecat.Catalog {
	return func(c icecat.Catalog) icecat.Catalog { return &spy{Catalog: c, inj: inj, op: op, loads: loads} }
}

type spy struct {
	icecat.Catalog
	inj   *faultcat.Injector
	op    faultcat.Op
	loads *int
	seen  bool
}

func (s *spy) note(op faultcat.Op) {
	if op == s.op && !s.seen {
		s.seen = true
		*s.loads = s.inj.Count(faultcat.OpLoad)
	}
}

func (s *spy) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, ups []table.Update) (table.Metadata, string, error) {
	s.note(faultcat.OpCommit)
	return s.Catalog.CommitTable(ctx, ident, reqs, ups)
}

func (s *spy) DropTable(ctx context.Context, ident table.Identifier) error {
	s.note(faultcat.OpDrop)
	return s.Catalog.DropTable(ctx, ident)
}

func (s *spy) RenameTable(ctx context.Context, from, to table.Identifier) (*table.Table, error) {
	s.note(faultcat.OpRename)
	return s.Catalog.RenameTable(ctx, from, to)
}
