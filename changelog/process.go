package changelog

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/internal/rows"
	"github.com/floedata/floe/internal/scan"
)

// errStopped ends the reading of raw changes once the consumer of Rows
// has stopped; run returns nil for it.
var errStopped = errors.New("changelog: the consumer stopped reading")

// run computes the changelog and hands each output batch (full schema:
// all data columns and the metadata columns) to emit, which takes it. It
// reads each snapshot's raw changes in order (readSnapshot), and for
// whole-range views (net changes, per key) groups everything read once at
// the end (emitRange).
func (c *Changelog) run(ctx context.Context, emit func(arrow.RecordBatch) bool) error {
	if len(c.rng.Snapshots) == 0 {
		return nil
	}
	fs, err := c.tbl.FS(ctx)
	if err != nil {
		return err
	}
	// The constant metadata arrays are kept for the read only (the
	// batches that use them hold their own references).
	defer c.meta.release()
	src := &source{c: c, fs: fs, states: map[string]*scan.State{}, keepCarryovers: c.opts.NetChanges}
	// whole holds the rows of the whole range for the views computed over
	// it: net changes group whole rows, per-key views identifiers.
	var whole *rows.Partitioner
	if c.opts.NetChanges {
		whole = rows.NewPartitioner(c.full, c.dataCols, c.opts.MemoryBudget, c.opts.TempDir)
	} else if c.opts.PerKey != PerKeyNone {
		whole = rows.NewPartitioner(c.full, c.idCols, c.opts.MemoryBudget, c.opts.TempDir)
	}
	if whole != nil {
		defer whole.Close()
	}
	stopped := false
	out := func(rec arrow.RecordBatch) error {
		if stopped {
			rec.Release()
			return errStopped
		}
		if whole != nil {
			err := whole.Add(ctx, rec)
			rec.Release()
			return err
		}
		if !emit(rec) {
			stopped = true
		}
		return nil
	}
	for ordinal, s := range c.rng.Snapshots {
		if stopped {
			return nil
		}
		if err := c.readSnapshot(ctx, src, s, ordinal, out); err != nil {
			return err
		}
	}
	if whole == nil || stopped {
		return nil
	}
	return c.emitRange(ctx, whole, emit)
}

// readSnapshot reads the raw changes of snapshot s (the range's ordinal-th)
// and hands its changes to out: as they are read for net changes and for
// snapshots whose raw changes are already their changes (direct),
// grouped by identifier (update images) or by whole row (carry-over
// removal) and processed otherwise.
func (c *Changelog) readSnapshot(ctx context.Context, src *source, s *table.Snapshot, ordinal int, out func(arrow.RecordBatch) error) error {
	wrap := func(err error) error {
		return fmt.Errorf("changelog of %s, snapshot %d: %w", scan.FormatIdent(c.tbl.Identifier()), s.SnapshotID, err)
	}
	if c.opts.NetChanges {
		// The reference's net changes run one iterator over the raw
		// changes of the whole range (RemoveNetCarryoverIterator): a
		// row's carry-overs are not removed snapshot by snapshot first,
		// so a row that survives takes the ordinal and snapshot of its
		// last re-insertion, carry-overs included.
		if _, err := src.changes(ctx, s, ordinal, func(kinds) func(arrow.RecordBatch) error { return out }); err != nil {
			return wrap(err)
		}
		return nil
	}
	keyCols := c.dataCols
	if c.updates {
		keyCols = c.idCols
	}
	var part *rows.Partitioner
	_, err := src.changes(ctx, s, ordinal, func(k kinds) func(arrow.RecordBatch) error {
		if c.direct(k) {
			return out
		}
		part = rows.NewPartitioner(c.full, keyCols, c.opts.MemoryBudget, c.opts.TempDir)
		return func(rec arrow.RecordBatch) error {
			err := part.Add(ctx, rec)
			rec.Release()
			return err
		}
	})
	if part != nil {
		defer part.Close()
	}
	if err != nil {
		return wrap(err)
	}
	if part == nil {
		return nil
	}
	// The partitions are processed in parallel and their results handed
	// to out in partition order (processInOrder).
	return processInOrder(ctx, part.Partitions(), spillBudget(part, c.opts.MemoryBudget),
		func(ctx context.Context, recs []arrow.RecordBatch) (arrow.RecordBatch, error) {
			return c.processSnapshot(ctx, recs, s.SnapshotID)
		}, out)
}

// spillBudget is the bound processInOrder keeps on the partitions of part
// in flight: the memory budget when part spilled, else none (its rows are
// in memory already).
func spillBudget(part *rows.Partitioner, budget int64) int64 {
	if !part.Spilled() {
		return 0
	}
	if budget <= 0 {
		budget = rows.DefaultMemoryBudget
	}
	return budget
}

// emitRange computes the whole-range view (net changes or per key) of the
// rows read, partition by partition (in parallel, in order:
// processInOrder), and hands the results to emit until it stops taking
// them.
func (c *Changelog) emitRange(ctx context.Context, whole *rows.Partitioner, emit func(arrow.RecordBatch) bool) error {
	view := c.perKey
	if c.opts.NetChanges {
		view = c.netChanges
	}
	err := processInOrder(ctx, whole.Partitions(), spillBudget(whole, c.opts.MemoryBudget), view, func(res arrow.RecordBatch) error {
		if !emit(res) {
			return errStopped
		}
		return nil
	})
	if errors.Is(err, errStopped) {
		return nil
	}
	return err
}

// direct reports whether the raw changes of a snapshot that may produce
// the change types k are already its changes, so that they can go out as
// they are read instead of being grouped: with only inserts, or only
// deletes and no update images, no DELETE/INSERT pair can cancel as a
// carry-over or become an update (an append-only snapshot, a merge-on-read
// delete). Deletes alone still need grouping when update images are asked
// for, because two deletes of one identifier are an error there.
//
// NB: k is exact for tables that follow the spec, where a snapshot that
// replaces a deletion vector removes the old one; were a table to carry
// two vectors for one file, rows the newer one no longer deletes would
// come out as inserts without being cancelled against identical deletes.
func (c *Changelog) direct(k kinds) bool {
	return !k.deletes || (!k.inserts && !c.updates)
}

// rowRef is one row of a partition: which batch, which row, its change
// type, and its keys.
type rowRef struct {
	b, i     int
	kind     string
	ordinal  int32
	snapshot int64
	full     string
	id       string
}

// outRow is a row to output: a source row with its change type, ordinal
// and snapshot (which per-key views may take from another event).
type outRow struct {
	rowRef
	kind     string
	ordinal  int32
	snapshot int64
}

func as(r rowRef, kind string) outRow { return outRow{r, kind, r.ordinal, r.snapshot} }

func (c *Changelog) refs(recs []arrow.RecordBatch, withID bool) []rowRef {
	n := c.dataSch.NumFields()
	var out []rowRef
	var buf []byte
	for b, rec := range recs {
		kinds := rec.Column(n).(*array.String)
		ords := rec.Column(n + 1).(*array.Int32)
		snaps := rec.Column(n + 2).(*array.Int64)
		for i := 0; i < int(rec.NumRows()); i++ {
			buf = rows.AppendKey(buf[:0], rec, c.dataCols, i)
			r := rowRef{b: b, i: i, kind: kinds.Value(i), ordinal: ords.Value(i), snapshot: snaps.Value(i), full: string(buf)}
			if withID {
				buf = rows.AppendKey(buf[:0], rec, c.idCols, i)
				r.id = string(buf)
			}
			out = append(out, r)
		}
	}
	return out
}

// survivors removes carry-overs from one partition of a snapshot's raw
// changes: DELETE/INSERT pairs of identical rows cancel as a multiset, so
// of each distinct row max(0, d-i) deletes or max(0, i-d) inserts
// survive, the first ones in order (NULL equals NULL). It returns the
// surviving rows without identifier keys.
func (c *Changelog) survivors(recs []arrow.RecordBatch) []rowRef {
	n := c.dataSch.NumFields()
	total := 0
	for _, r := range recs {
		total += int(r.NumRows())
	}
	// NB: rows are grouped by hash with an exact comparison (rowGroups)
	// rather than by a map of their encoded keys: a copy-on-write snapshot
	// holds every row of the rewritten files twice, and a key string per
	// row costs several times the row itself.
	g := newRowGroups(recs, c.dataCols, total/2)
	groupOf := make([]int32, 0, total)
	var dels, ins []int32
	for b, rec := range recs {
		kinds := rec.Column(n).(*array.String)
		for i := 0; i < int(rec.NumRows()); i++ {
			id := g.add(b, i)
			if int(id) == len(dels) {
				dels = append(dels, 0)
				ins = append(ins, 0)
			}
			if kinds.Value(i) == Delete {
				dels[id]++
			} else {
				ins[id]++
			}
			groupOf = append(groupOf, id)
		}
	}
	for id := range dels {
		m := min(dels[id], ins[id])
		dels[id] -= m
		ins[id] -= m
	}
	var out []rowRef
	k := 0
	for b, rec := range recs {
		kinds := rec.Column(n).(*array.String)
		ords := rec.Column(n + 1).(*array.Int32)
		snaps := rec.Column(n + 2).(*array.Int64)
		for i := 0; i < int(rec.NumRows()); i++ {
			id := groupOf[k]
			k++
			kind := kinds.Value(i)
			if kind == Delete {
				if dels[id] == 0 {
					continue
				}
				dels[id]--
			} else {
				if ins[id] == 0 {
					continue
				}
				ins[id]--
			}
			out = append(out, rowRef{b: b, i: i, kind: kind, ordinal: ords.Value(i), snapshot: snaps.Value(i)})
		}
	}
	return out
}

// processSnapshot removes carry-overs from one partition of a snapshot's
// raw changes and, when asked, pairs DELETE and INSERT of one identifier
// into UPDATE_BEFORE and UPDATE_AFTER.
func (c *Changelog) processSnapshot(ctx context.Context, recs []arrow.RecordBatch, snapshotID int64) (arrow.RecordBatch, error) {
	refs := c.survivors(recs)
	if c.updates {
		var buf []byte
		for i := range refs {
			buf = rows.AppendKey(buf[:0], recs[refs[i].b], c.idCols, refs[i].i)
			refs[i].id = string(buf)
		}
	}
	kinds := make([]string, len(refs))
	for i, r := range refs {
		kinds[i] = r.kind
	}
	if c.updates {
		groups := map[string][]int{}
		var order []string
		for i, r := range refs {
			if _, ok := groups[r.id]; !ok {
				order = append(order, r.id)
			}
			groups[r.id] = append(groups[r.id], i)
		}
		for _, id := range order {
			g := groups[id]
			var dels, ins []int
			for _, i := range g {
				if refs[i].kind == Delete {
					dels = append(dels, i)
				} else {
					ins = append(ins, i)
				}
			}
			if len(dels) >= 2 {
				r := refs[dels[0]]
				// The reference's procedure groups by the identifier columns
				// and _change_ordinal and names both in its message.
				return nil, fmt.Errorf("%w: Cannot compute updates because there are multiple rows with the same identifier fields([%s,%s]). Please make sure the rows are unique. (snapshot %d, %s)",
					ErrDuplicateIdentifier, strings.Join(c.idNames, ","), ChangeOrdinalColumn, snapshotID, rows.FormatKey(recs[r.b], c.idCols, r.i))
			}
			if len(dels) == 1 && len(ins) >= 1 {
				kinds[dels[0]] = UpdateBefore
				kinds[ins[0]] = UpdateAfter
			}
		}
	}
	outs := make([]outRow, len(refs))
	for i, r := range refs {
		outs[i] = as(r, kinds[i])
	}
	// A readable, deterministic order: by identifier (or row), before-images
	// and deletes first.
	rank := map[string]int{UpdateBefore: 0, Delete: 1, UpdateAfter: 2, Insert: 3}
	sort.SliceStable(outs, func(i, j int) bool {
		ki, kj := outs[i].full, outs[j].full
		if c.updates {
			ki, kj = outs[i].id, outs[j].id
		}
		if ki != kj {
			return ki < kj
		}
		return rank[outs[i].kind] < rank[outs[j].kind]
	})
	return c.build(ctx, recs, outs)
}

// build gathers the chosen rows of a partition with their (possibly new)
// change types into one batch.
func (c *Changelog) build(ctx context.Context, recs []arrow.RecordBatch, refs []outRow) (arrow.RecordBatch, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	inPart := 0
	for _, r := range recs {
		inPart += int(r.NumRows())
	}
	if 2*len(refs) >= inPart {
		// Most rows go out (the rows of a rewrite left after pairing are
		// as good as all updates): concatenate the partition, then take
		// the rows in output order, one copy fewer than below and one
		// kernel call per column instead of one per batch (a partition's
		// batches are slices of every batch routed to it, a few rows each).
		all, err := rows.Concat(c.full, recs)
		if err != nil {
			return nil, err
		}
		defer all.Release()
		starts := make([]int, len(recs))
		for b := 1; b < len(recs); b++ {
			starts[b] = starts[b-1] + int(recs[b-1].NumRows())
		}
		idx := make([]int64, len(refs))
		for k, r := range refs {
			idx[k] = int64(starts[r.b] + r.i)
		}
		return c.withKinds(ctx, all, idx, refs)
	}
	// Few rows go out: take them batch by batch, then concatenate.
	byBatch := map[int][]int64{}
	var batchOrder []int
	pos := make([]struct{ b, j int }, len(refs))
	for k, r := range refs {
		r := r.rowRef
		if _, ok := byBatch[r.b]; !ok {
			batchOrder = append(batchOrder, r.b)
		}
		pos[k] = struct{ b, j int }{r.b, len(byBatch[r.b])}
		byBatch[r.b] = append(byBatch[r.b], int64(r.i))
	}
	sort.Ints(batchOrder)
	var parts []arrow.RecordBatch
	defer func() {
		for _, p := range parts {
			p.Release()
		}
	}()
	offset := map[int]int{}
	total := 0
	for _, b := range batchOrder {
		t, err := rows.Take(ctx, recs[b], byBatch[b])
		if err != nil {
			return nil, err
		}
		parts = append(parts, t)
		offset[b] = total
		total += len(byBatch[b])
	}
	all, err := rows.Concat(c.full, parts)
	if err != nil {
		return nil, err
	}
	defer all.Release()
	// Output order follows refs.
	idx := make([]int64, len(refs))
	for k := range refs {
		idx[k] = int64(offset[pos[k].b] + pos[k].j)
	}
	return c.withKinds(ctx, all, idx, refs)
}

// withKinds takes rows idx of all, in that order, with the metadata
// columns of refs (one per row taken).
func (c *Changelog) withKinds(ctx context.Context, all arrow.RecordBatch, idx []int64, refs []outRow) (arrow.RecordBatch, error) {
	n := c.dataSch.NumFields()
	sb := array.NewStringBuilder(memory.DefaultAllocator)
	defer sb.Release()
	ob := array.NewInt32Builder(memory.DefaultAllocator)
	defer ob.Release()
	nb := array.NewInt64Builder(memory.DefaultAllocator)
	defer nb.Release()
	for _, r := range refs {
		sb.Append(r.kind)
		ob.Append(r.ordinal)
		nb.Append(r.snapshot)
	}
	ordered, err := rows.Take(ctx, all, idx)
	if err != nil {
		return nil, err
	}
	defer ordered.Release()
	ct, co, cs := sb.NewArray(), ob.NewArray(), nb.NewArray()
	defer ct.Release()
	defer co.Release()
	defer cs.Release()
	cols := append([]arrow.Array{}, ordered.Columns()...)
	cols[n], cols[n+1], cols[n+2] = ct, co, cs
	return array.NewRecordBatch(c.full, cols, int64(len(refs))), nil
}

// netChanges implements the reference's net-change iterator over one
// partition (grouped by whole data row across snapshots).
func (c *Changelog) netChanges(ctx context.Context, recs []arrow.RecordBatch) (arrow.RecordBatch, error) {
	refs := c.refs(recs, false)
	groups := map[string][]int{}
	var order []string
	for i, r := range refs {
		if _, ok := groups[r.full]; !ok {
			order = append(order, r.full)
		}
		groups[r.full] = append(groups[r.full], i)
	}
	var outs []outRow
	for _, key := range order {
		g := groups[key]
		sort.SliceStable(g, func(a, b int) bool {
			ra, rb := refs[g[a]], refs[g[b]]
			if ra.ordinal != rb.ordinal {
				return ra.ordinal < rb.ordinal
			}
			return ra.kind < rb.kind // DELETE < INSERT
		})
		first := -1
		cnt := 0
		for _, i := range g {
			if first < 0 || cnt == 0 {
				first, cnt = i, 1
				continue
			}
			if refs[i].kind == refs[first].kind {
				cnt++
			} else {
				cnt--
			}
		}
		for j := 0; j < cnt; j++ {
			outs = append(outs, as(refs[first], refs[first].kind))
		}
	}
	return c.build(ctx, recs, outs)
}

// perKey reduces one partition (grouped by identifier across snapshots)
// to the latest action or the net change per identifier.
func (c *Changelog) perKey(ctx context.Context, recs []arrow.RecordBatch) (arrow.RecordBatch, error) {
	refs := c.refs(recs, true)
	groups := map[string][]int{}
	var order []string
	for i, r := range refs {
		if _, ok := groups[r.id]; !ok {
			order = append(order, r.id)
		}
		groups[r.id] = append(groups[r.id], i)
	}
	rank := map[string]int{UpdateBefore: 0, Delete: 1, UpdateAfter: 2, Insert: 3}
	var outs []outRow
	for _, id := range order {
		g := groups[id]
		sort.SliceStable(g, func(a, b int) bool {
			ra, rb := refs[g[a]], refs[g[b]]
			if ra.ordinal != rb.ordinal {
				return ra.ordinal < rb.ordinal
			}
			return rank[ra.kind] < rank[rb.kind]
		})
		// Check that the identifier names at most one live row throughout:
		// the live count, from an unknown start of 0 or 1, must stay in [0,1].
		lo, hi := 0, 1 // possible start counts
		live := 0
		for _, i := range g {
			switch refs[i].kind {
			case Insert:
				live++
			case Delete:
				live--
			}
			if live+lo < 0 {
				lo = -live
			}
			if live+hi > 1 {
				hi = 1 - live
			}
			if lo > hi {
				r := refs[i]
				return nil, fmt.Errorf("%w: several live rows share the identifier (%s) (snapshot %d); per-key changes need unique identifiers: use --net-changes instead",
					ErrDuplicateIdentifier, rows.FormatKey(recs[r.b], c.idCols, r.i), r.snapshot)
			}
		}
		last := refs[g[len(g)-1]]
		switch c.opts.PerKey {
		case PerKeyLatest:
			// The latest action, ignoring before-images.
			for j := len(g) - 1; j >= 0; j-- {
				if refs[g[j]].kind != UpdateBefore {
					last = refs[g[j]]
					break
				}
			}
			outs = append(outs, as(last, last.kind))
		case PerKeyNet:
			first := refs[g[0]]
			hadBefore := first.kind == Delete || first.kind == UpdateBefore
			hasAfter := last.kind == Insert || last.kind == UpdateAfter
			// The net change carries the ordinal and snapshot of the last
			// event, when the key reached its end state.
			at := func(r rowRef, kind string) outRow { return outRow{r, kind, last.ordinal, last.snapshot} }
			switch {
			case !hadBefore && hasAfter:
				outs = append(outs, at(last, Insert))
			case hadBefore && !hasAfter:
				outs = append(outs, at(first, Delete))
			case hadBefore && hasAfter && first.full != last.full:
				outs = append(outs, at(first, UpdateBefore), at(last, UpdateAfter))
			}
		}
	}
	return c.build(ctx, recs, outs)
}
