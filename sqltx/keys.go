package sqltx

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/internal/rows"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/transform"
	"github.com/floedata/floe/merge"
)

// existingKeys returns one key of recs (columns = keys) that the table tbl
// already holds ("" when none), scanning only the files that may hold
// them; the comparison runs in the session, so that types of the result
// and of the table need not be identical.
func existingKeys(ctx *transform.Context, sess Session, tbl *table.Table, sch *arrow.Schema, recs []arrow.RecordBatch, keys []string) (string, error) {
	all := make([]int, len(keys))
	for i := range all {
		all[i] = i
	}
	opts := scan.Options{Columns: keys, Filter: merge.KeyFilter(tbl.Schema(), recs, all, keys)}
	if lo, hi, ok := intRange(recs); ok && len(keys) == 1 {
		// NB: the file statistics prune the files that cannot hold a new
		// key, but a large file whose range covers them (a full build's
		// one file) is read whole; staging all its keys for the session
		// cost more than reading them. Only the held keys within the new
		// keys' range can match; the session still compares exactly.
		opts.RowFilter = func(ctx context.Context, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
			keep, ok := inIntRange(rec.Column(0), lo, hi)
			if !ok {
				rec.Retain()
				return rec, nil
			}
			return rows.Select(ctx, rec, keep)
		}
	}
	dsch, seq, err := scan.Rows(ctx, tbl, opts)
	if err != nil {
		return "", err
	}
	if err := sess.Bind(ctx, "", "__floe_new_keys", transform.NewRows(sch, func(yield func(arrow.RecordBatch, error) bool) {
		for _, rec := range recs {
			rec.Retain()
			if !yield(rec, nil) {
				return
			}
		}
	})); err != nil {
		return "", err
	}
	if err := sess.Bind(ctx, "", "__floe_held_keys", transform.NewRows(dsch, seq)); err != nil {
		return "", err
	}
	match := make([]string, len(keys))
	for i, k := range keys {
		match[i] = fmt.Sprintf("n.%s = h.%s", quoteIdent(k), quoteIdent(k))
	}
	rows, err := sess.Strings(ctx, fmt.Sprintf("SELECT %s FROM __floe_new_keys n JOIN __floe_held_keys h ON %s LIMIT 1",
		concatKey("n.", keys), strings.Join(match, " AND ")))
	if err != nil {
		return "", err
	}
	if len(rows) == 0 {
		return "", nil
	}
	return rows[0][0], nil
}

// intRange is the least and the greatest value of the first column of
// recs when it is an integer column with a value (ok false otherwise).
func intRange(recs []arrow.RecordBatch) (lo, hi int64, ok bool) {
	for _, rec := range recs {
		col := rec.Column(0)
		for i := range col.Len() {
			v, isInt := intAt(col, i)
			if !isInt {
				return 0, 0, false
			}
			if col.IsNull(i) {
				continue
			}
			if !ok || v < lo {
				lo = v
			}
			if !ok || v > hi {
				hi = v
			}
			ok = true
		}
	}
	return lo, hi, ok
}

// inIntRange flags the values of an integer column within [lo, hi]
// (ok false when col is not an integer column).
func inIntRange(col arrow.Array, lo, hi int64) ([]bool, bool) {
	keep := make([]bool, col.Len())
	for i := range keep {
		v, isInt := intAt(col, i)
		if !isInt {
			return nil, false
		}
		keep[i] = !col.IsNull(i) && v >= lo && v <= hi
	}
	return keep, true
}

// intAt is value i of a signed integer column (ok false for another type).
func intAt(col arrow.Array, i int) (int64, bool) {
	switch a := col.(type) {
	case *array.Int64:
		return a.Value(i), true
	case *array.Int32:
		return int64(a.Value(i)), true
	case *array.Int16:
		return int64(a.Value(i)), true
	case *array.Int8:
		return int64(a.Value(i)), true
	}
	return 0, false
}
