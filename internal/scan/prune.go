package scan

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// planCached is Plan from the state of snap loaded through the
// ManifestCache of ctx: iceberg-go's planning reads every manifest again
// for each scan (a build plans several scans of the same snapshots), and
// decoding manifests is most of a small build's metadata cost. Data files
// are pruned by filter against their column statistics (fileMayMatch;
// partition values are not used, so a file without statistics is kept);
// their delete files are all those of the state that apply (DeletesFor),
// as Plan gives them. ok is false when filter cannot be bound to the
// snapshot's schema: Plan then plans through iceberg-go, which says why.
func planCached(ctx context.Context, tbl *table.Table, snap *table.Snapshot, filter iceberg.BooleanExpression) (_ []Task, ok bool, _ error) {
	var bound iceberg.BooleanExpression
	if filter != nil && !filter.Equals(iceberg.AlwaysTrue{}) {
		sc := tbl.Schema()
		if snap.SchemaID != nil {
			for _, s := range tbl.Metadata().Schemas() {
				if s.ID == *snap.SchemaID {
					sc = s
				}
			}
		}
		b, err := iceberg.BindExpr(sc, filter, true)
		if err != nil {
			return nil, false, nil
		}
		bound = b
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, false, err
	}
	st, err := LoadState(ctx, fs, tbl.Metadata(), snap)
	if err != nil {
		return nil, false, fmt.Errorf("plan scan of %s at snapshot %d: %w", FormatIdent(tbl.Identifier()), snap.SnapshotID, err)
	}
	out := make([]Task, 0, len(st.Data))
	for _, e := range st.Data {
		if bound != nil && !fileMayMatch(bound, e.File) {
			continue
		}
		seq := e.DataSeq
		out = append(out, Task{File: e.File, Deletes: st.DeletesFor(e), DataSeq: &seq})
	}
	return out, true, nil
}

// fileMayMatch reports whether data file df may hold a row matching the
// bound expression e, by the lower and upper bounds of its columns:
// conservative, true whenever the statistics cannot rule the file out
// (no bounds, a type without an order, NOT, a transform, NaN, ...).
func fileMayMatch(e iceberg.BooleanExpression, df iceberg.DataFile) bool {
	ok, err := iceberg.VisitExpr(e, statsVisitor{df})
	return ok || err != nil
}

type statsVisitor struct{ df iceberg.DataFile }

func (statsVisitor) VisitTrue() bool                            { return true }
func (statsVisitor) VisitFalse() bool                           { return false }
func (statsVisitor) VisitNot(bool) bool                         { return true }
func (statsVisitor) VisitAnd(l, r bool) bool                    { return l && r }
func (statsVisitor) VisitOr(l, r bool) bool                     { return l || r }
func (statsVisitor) VisitUnbound(iceberg.UnboundPredicate) bool { return true }

func (v statsVisitor) VisitBound(p iceberg.BoundPredicate) bool {
	ref, isRef := p.Term().(iceberg.BoundReference)
	if !isRef {
		return true
	}
	f := ref.Field()
	lo, hasLo := v.bound(v.df.LowerBoundValues(), f)
	hi, hasHi := v.bound(v.df.UpperBoundValues(), f)
	// below: x < lo rules the file out; above: x > hi does.
	below := func(x any) bool {
		c, ok := compareValues(x, lo)
		return hasLo && ok && c < 0
	}
	above := func(x any) bool {
		c, ok := compareUpper(x, hi)
		return hasHi && ok && c > 0
	}
	switch q := p.(type) {
	case iceberg.BoundLiteralPredicate:
		x := q.Literal().Any()
		switch q.Op() {
		case iceberg.OpEQ:
			return !below(x) && !above(x)
		case iceberg.OpLT: // some value < x: not when lo >= x
			c, ok := compareValues(x, lo)
			return !(hasLo && ok && c <= 0)
		case iceberg.OpLTEQ:
			return !below(x)
		case iceberg.OpGT: // some value > x: not when hi <= x
			c, ok := compareValues(x, hi)
			return !(hasHi && ok && c >= 0 && !truncatable(x))
		case iceberg.OpGTEQ:
			return !above(x)
		}
	case iceberg.BoundSetPredicate:
		if q.Op() != iceberg.OpIn {
			return true
		}
		for _, l := range q.Literals().Members() {
			if x := l.Any(); !below(x) && !above(x) {
				return true
			}
		}
		return false
	}
	return true
}

// truncatable reports whether bounds of x's kind may be truncated
// (strings and binary): then an upper bound equal to x does not rule out
// a greater value.
func truncatable(x any) bool {
	switch x.(type) {
	case string, []byte:
		return true
	}
	return false
}

// bound decodes the bound of field f in bounds.
func (statsVisitor) bound(bounds map[int][]byte, f iceberg.NestedField) (any, bool) {
	b, ok := bounds[f.ID]
	if !ok || b == nil {
		return nil, false
	}
	l, err := iceberg.LiteralFromBytes(f.Type, b)
	if err != nil {
		return nil, false
	}
	return l.Any(), true
}
