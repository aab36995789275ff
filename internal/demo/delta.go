package demo

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/delta"
	"github.com/floedata/floe/delta/deltasync"
)

// deltaData is a small Delta table with the Change Data Feed on, as Spark
// writes one, in two steps: v0 holds version 0 (1000 events), v1 the files
// version 1 adds (an UPDATE of 3 events and a DELETE of one, as a rewrite
// with change data files). go test ./internal/demo -run TestDeltaData
// -update writes them again.
//
//go:embed all:deltadata
var deltaData embed.FS

// addVersion copies the files of one step of deltaData into the table at
// path.
func addVersion(path, step string) error {
	root := "deltadata/" + step
	return fs.WalkDir(deltaData, root, func(name string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := deltaData.ReadFile(name)
		if err != nil {
			return err
		}
		dst := filepath.Join(path, filepath.FromSlash(name[len(root)+1:]))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
}

// demoDelta puts a Delta table with the Change Data Feed in dir, syncs it
// into Iceberg, and syncs again after its next commit, and once more when
// nothing changed.
func (d *demo) demoDelta(dir string) error {
	path := filepath.Join(dir, "delta", "events")
	if err := addVersion(path, "v0"); err != nil {
		return err
	}
	d.say("Delta table %s: version 0, 1000 events, Change Data Feed enabled", path)
	sync := func() error {
		src, err := delta.Open(d.ctx, path)
		if err != nil {
			return err
		}
		res, err := deltasync.Sync(d.ctx, d.cat, src, table.Identifier{"lake", "events"}, deltasync.Options{EqualityColumns: []string{"id"}})
		if err != nil {
			return err
		}
		switch {
		case res.Migrated:
			d.say("sync: created lake.events and migrated Delta version %d (%d rows); watermark %d", res.MigratedVersion, res.MigratedRows, res.Watermark)
		case len(res.Batches) > 0:
			b := res.Batches[len(res.Batches)-1]
			d.say("sync: applied Delta versions %d..%d (%d change rows: %d upserts, %d deletes) in Iceberg snapshot %d; watermark %d",
				b.FromVersion, b.ToVersion, b.ChangeRows, b.Upserts, b.Deletes, b.SnapshotID, res.Watermark)
		default:
			d.say("sync: nothing new in the Delta table, nothing committed")
		}
		return d.checkDelta(src)
	}
	if err := sync(); err != nil {
		return err
	}
	if err := addVersion(path, "v1"); err != nil {
		return err
	}
	d.say("Delta version 1: 3 events updated, 1 deleted (a rewrite with change data files)")
	if err := sync(); err != nil {
		return err
	}
	return sync()
}

// checkDelta compares lake.events with the Delta table's latest snapshot.
func (d *demo) checkDelta(src *delta.Table) error {
	snap, err := src.LatestSnapshot(d.ctx)
	if err != nil {
		return err
	}
	_, seq, err := snap.Scan(d.ctx, delta.ScanOptions{Columns: []string{"id", "kind"}})
	if err != nil {
		return err
	}
	var want []string
	for rec, err := range seq {
		if err != nil {
			return err
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			want = append(want, "("+cell(rec.Column(0), i)+","+cell(rec.Column(1), i)+")")
		}
		rec.Release()
	}
	sort.Strings(want)
	tbl, err := d.cat.Load(d.ctx, table.Identifier{"lake", "events"})
	if err != nil {
		return err
	}
	got, err := currentRows(d.ctx, tbl, []string{"id", "kind"}, "")
	if err != nil {
		return err
	}
	if len(got) != len(want) {
		return fmt.Errorf("demo check failed: lake.events has %d rows, the Delta table %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			return fmt.Errorf("demo check failed: lake.events has row %s where the Delta table has %s", got[i], want[i])
		}
	}
	d.say("ok: lake.events = the Delta table at version %d (%d rows)", snap.Version(), len(got))
	return nil
}
