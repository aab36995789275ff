package transform

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/changelog"
	"github.com/floedata/floe/expr"
	"github.com/floedata/floe/internal/rows"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/merge"
)

// ErrKeyNotUnique is wrapped when rows written or read by key share a key:
// an output maintained by key would silently keep one of them.
var ErrKeyNotUnique = errors.New("key not unique")

// ErrKeyNotIdentifier is merge.ErrKeyNotIdentifier: an output is
// maintained by a key that is not its identifier, and the output does not
// allow it (AllowNonIdentifierKey).
var ErrKeyNotIdentifier = merge.ErrKeyNotIdentifier

// keyIndices returns the columns of schema named keys (exact names first,
// then case-insensitive), or an error naming the missing one.
func keyIndices(schema *arrow.Schema, keys []string) ([]int, error) {
	out := make([]int, 0, len(keys))
	for _, k := range keys {
		idx := schema.FieldIndices(k)
		if len(idx) == 0 {
			for i, f := range schema.Fields() {
				if strings.EqualFold(f.Name, k) {
					idx = []int{i}
					break
				}
			}
		}
		if len(idx) == 0 {
			return nil, fmt.Errorf("%w %q (columns: %s)", ErrUnknownColumn, k, fieldNames(schema))
		}
		out = append(out, idx[0])
	}
	return out, nil
}

// uniqueStream passes seq through and, after its last batch, fails with
// ErrKeyNotUnique (naming where, the key and an example value) when two of
// its rows share a key, for each key column set of keySets. The check holds
// only key columns, spilling past rows.DefaultMemoryBudget.
func uniqueStream(ctx context.Context, where string, schema *arrow.Schema, seq iter.Seq2[arrow.RecordBatch, error], keySets [][]string) (iter.Seq2[arrow.RecordBatch, error], error) {
	if len(keySets) == 0 {
		return seq, nil
	}
	type check struct {
		keys []string
		cols []int
	}
	var checks []check
	for _, ks := range keySets {
		cols, err := keyIndices(schema, ks)
		if err != nil {
			return nil, fmt.Errorf("%s: key: %w", where, err)
		}
		checks = append(checks, check{ks, cols})
	}
	return func(yield func(arrow.RecordBatch, error) bool) {
		ucs := make([]*rows.UniqueCheck, len(checks))
		for i, c := range checks {
			ucs[i] = rows.NewUniqueCheck(schema, c.cols, 0, "")
			defer ucs[i].Close()
		}
		for rec, err := range seq {
			if err != nil {
				yield(nil, err)
				return
			}
			for _, uc := range ucs {
				if err := uc.Add(ctx, rec); err != nil {
					rec.Release()
					yield(nil, err)
					return
				}
			}
			if !yield(rec, nil) {
				return
			}
		}
		for i, uc := range ucs {
			d, err := uc.Find(ctx)
			if err != nil {
				yield(nil, err)
				return
			}
			if d != nil {
				if where != "" {
					where += ": "
				}
				yield(nil, fmt.Errorf("%w: %s%d rows have the key %s (key %s); a key must identify one row, nothing committed",
					ErrKeyNotUnique, where, d.Count, d.Key, strings.Join(checks[i].keys, ", ")))
				return
			}
		}
	}, nil
}

// checkSourceKeys passes the changes (latest change per key) through and,
// after the last one, checks them against the input's current (filtered)
// state: every key they touch must identify at most one row there, a key
// whose latest change upserts must have its row, a key whose latest change
// deletes must have none. Otherwise the key was not unique in the source
// at some point of the range, and applying the changes would lose rows of
// the output (a change to one of two rows sharing a key overwrites the
// other). The input is scanned only where its files may hold those keys.
func (in *Input) checkSourceKeys(changes *Rows, keys []string) (*Rows, error) {
	schema := changes.Schema()
	cols, err := keyIndices(schema, keys)
	if err != nil {
		return nil, fmt.Errorf("input %s: key: %w", in.spec.Name, err)
	}
	ct := schema.FieldIndices(changelog.ChangeTypeColumn)
	if len(ct) == 0 {
		return changes, nil
	}
	keyFields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		keyFields[i] = schema.Field(c)
	}
	ks := arrow.NewSchema(keyFields, nil)
	src := changes.All()
	return NewRows(schema, func(yield func(arrow.RecordBatch, error) bool) {
		var touched []arrow.RecordBatch // key columns of the changes
		var upsert []bool               // per row of touched, in order
		defer func() {
			for _, r := range touched {
				r.Release()
			}
		}()
		for rec, err := range src {
			if err != nil {
				yield(nil, err)
				return
			}
			kinds := rec.Column(ct[0]).(*array.String)
			for i := range int(rec.NumRows()) {
				k := kinds.Value(i)
				upsert = append(upsert, k == changelog.Insert || k == changelog.UpdateAfter)
			}
			touched = append(touched, rows.Project(rec, ks, cols))
			if !yield(rec, nil) {
				return
			}
		}
		if len(touched) == 0 {
			return
		}
		if err := in.checkKeysAtHead(ks, touched, upsert, keys); err != nil {
			yield(nil, err)
		}
	}), nil
}

// checkKeysAtHead counts the rows of the input's current (filtered) state
// with each key of recs (columns = the keys) and compares the counts with
// the latest changes (upsert[i]: the i-th key's row must be there).
func (in *Input) checkKeysAtHead(ks *arrow.Schema, recs []arrow.RecordBatch, upsert []bool, keys []string) error {
	ctx := in.ctx()
	all := make([]int, ks.NumFields())
	for i := range all {
		all[i] = i
	}
	type want struct {
		upsert bool
		count  int
		b, i   int // a row of recs with the key, for messages
	}
	wants := map[string]*want{}
	var buf []byte
	n := 0
	for b, r := range recs {
		for i := range int(r.NumRows()) {
			buf = rows.AppendKey(buf[:0], r, all, i)
			wants[string(buf)] = &want{upsert: upsert[n], b: b, i: i}
			n++
		}
	}
	id := in.head.SnapshotID
	opts := scan.Options{At: scan.At{SnapshotID: &id}}
	names := make([]string, ks.NumFields())
	for i, f := range ks.Fields() {
		names[i] = f.Name
	}
	var prune iceberg.BooleanExpression = merge.KeyFilter(in.tbl.Schema(), recs, all, names)
	// Only the key columns (and the filter's) are read.
	opts.Columns = append([]string(nil), names...)
	if in.filter != "" {
		e, err := expr.Parse(in.filter)
		if err != nil {
			return fmt.Errorf("input %s filter: %s", in.spec.Name, expr.FormatError(in.filter, err))
		}
		if ib, _, err := expr.ToIceberg(e, in.tbl.Schema()); err == nil {
			prune = iceberg.NewAnd(prune, ib)
		}
		for _, c := range expr.Columns(e) {
			if !slices.Contains(opts.Columns, c.Parts[0]) {
				opts.Columns = append(opts.Columns, c.Parts[0])
			}
		}
		isc, err := scan.SelectColumns(in.tbl.Schema(), opts.Columns)
		if err != nil {
			return fmt.Errorf("input %s filter: %w", in.spec.Name, err)
		}
		sch, err := table.SchemaToArrowSchema(isc, nil, true, false)
		if err != nil {
			return err
		}
		p, err := in.compileFilter(sch)
		if err != nil {
			return err
		}
		opts.RowFilter = p.Filter
	}
	opts.Filter = prune
	sch, seq, err := scan.Rows(ctx, in.tbl, opts)
	if err != nil {
		return fmt.Errorf("input %s: check the key: %w", in.spec.Name, err)
	}
	cols, err := keyIndices(sch, keys)
	if err != nil {
		return fmt.Errorf("input %s: key: %w", in.spec.Name, err)
	}
	keyList := strings.Join(keys, ", ")
	for rec, err := range seq {
		if err != nil {
			return fmt.Errorf("input %s: check the key: %w", in.spec.Name, err)
		}
		for i := range int(rec.NumRows()) {
			buf = rows.AppendKey(buf[:0], rec, cols, i)
			w, ok := wants[string(buf)]
			if !ok {
				continue
			}
			if w.count++; w.count > 1 {
				key := rows.FormatKey(rec, cols, i)
				rec.Release()
				return fmt.Errorf("%w: input %s (%s): several rows have the key %s (key %s); a key must identify one row, nothing committed",
					ErrKeyNotUnique, in.spec.Name, in.spec.Table, key, keyList)
			}
		}
		rec.Release()
	}
	for _, w := range wants {
		if (w.count == 1) != w.upsert {
			what, have := "deletes", "a row"
			if w.upsert {
				what, have = "upserts", "no row"
			}
			return fmt.Errorf("%w: input %s (%s): the latest change of the key %s (key %s) %s it, but the source has %s with it: the key was not unique in the source within the changes since the last build; nothing committed: rebuild the output in full (--full)",
				ErrKeyNotUnique, in.spec.Name, in.spec.Table, rows.FormatKey(recs[w.b], all, w.i), keyList, what, have)
		}
	}
	return nil
}

// keySets are the column sets that must be unique in the output's whole
// content: the table's identifier fields and the declared ones.
func (o *Output) keySets(tbl *table.Table) [][]string {
	var out [][]string
	if ids := merge.IdentifierNames(tbl); len(ids) > 0 {
		out = append(out, ids)
	}
	if len(o.spec.Identifier) > 0 && (len(out) == 0 || !merge.SameColumns(out[0], o.spec.Identifier)) {
		out = append(out, o.spec.Identifier)
	}
	return out
}
