package scan

import (
	"context"
	"fmt"
	"slices"

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
	mayMatch := compileFileFilter(bound)
	out := make([]Task, 0, len(st.Data))
	for _, e := range st.Data {
		if !mayMatch(e.File) {
			continue
		}
		seq := e.DataSeq
		out = append(out, Task{File: e.File, Deletes: st.DeletesFor(e), DataSeq: &seq})
	}
	return out, true, nil
}

// compileFileFilter returns a test of whether a data file may hold a row
// matching the bound expression e (nil: every file), by the lower and
// upper bounds of its columns: conservative, true whenever the statistics
// cannot rule the file out (no bounds, a type without an order, NOT, a
// transform, NaN, ...). A plan tests every file of a table against one
// filter, and a build's key filters are IN lists of up to thousands of
// values: the lists are sorted once here (a file is then one binary
// search), and conjunctions test their cheaper side first and stop at
// the first answer.
func compileFileFilter(e iceberg.BooleanExpression) func(iceberg.DataFile) bool {
	if e == nil {
		return keepAll.test
	}
	t, err := iceberg.VisitExpr(e, filterCompiler{})
	if err != nil {
		return keepAll.test
	}
	return t.test
}

// fileTest is a compiled part of a file filter and what testing it costs
// (the length of its IN lists).
type fileTest struct {
	cost int
	test func(iceberg.DataFile) bool
}

type filterCompiler struct{}

var keepAll = fileTest{test: func(iceberg.DataFile) bool { return true }}

func (filterCompiler) VisitTrue() fileTest { return keepAll }
func (filterCompiler) VisitFalse() fileTest {
	return fileTest{test: func(iceberg.DataFile) bool { return false }}
}
func (filterCompiler) VisitNot(fileTest) fileTest                     { return keepAll }
func (filterCompiler) VisitUnbound(iceberg.UnboundPredicate) fileTest { return keepAll }

func (filterCompiler) VisitAnd(l, r fileTest) fileTest {
	if r.cost < l.cost {
		l, r = r, l
	}
	return fileTest{cost: l.cost + r.cost, test: func(df iceberg.DataFile) bool { return l.test(df) && r.test(df) }}
}

func (filterCompiler) VisitOr(l, r fileTest) fileTest {
	if r.cost < l.cost {
		l, r = r, l
	}
	return fileTest{cost: l.cost + r.cost, test: func(df iceberg.DataFile) bool { return l.test(df) || r.test(df) }}
}

func (filterCompiler) VisitBound(p iceberg.BoundPredicate) fileTest {
	q, isSet := p.(iceberg.BoundSetPredicate)
	ref, isRef := p.Term().(iceberg.BoundReference)
	if !isSet || q.Op() != iceberg.OpIn || !isRef {
		return fileTest{cost: 1, test: func(df iceberg.DataFile) bool { return mayMatch(df, p) }}
	}
	members := q.Literals().Members()
	xs := make([]any, len(members))
	for i, l := range members {
		xs[i] = l.Any()
	}
	sorted := true
	slices.SortFunc(xs, func(a, b any) int {
		c, ok := compareValues(a, b)
		sorted = sorted && ok
		return c
	})
	f := ref.Field()
	return fileTest{cost: len(xs), test: func(df iceberg.DataFile) bool {
		lo, hasLo := boundOf(df.LowerBoundValues(), f)
		hi, hasHi := boundOf(df.UpperBoundValues(), f)
		below := func(x any) bool { c, ok := compareValues(x, lo); return hasLo && ok && c < 0 }
		above := func(x any) bool { c, ok := compareUpper(x, hi); return hasHi && ok && c > 0 }
		if sorted && len(xs) > 0 {
			_, loOK := compareValues(xs[0], lo)
			_, hiOK := compareUpper(xs[0], hi)
			if (!hasLo || loOK) && (!hasHi || hiOK) {
				// below holds for a prefix of the sorted values and
				// above for a suffix (a truncated upper bound compares
				// prefixes, which keeps the order): the file may match
				// when the first value not below is not above.
				i, _ := slices.BinarySearchFunc(xs, true, func(x any, _ bool) int {
					if below(x) {
						return -1
					}
					return 1
				})
				return i < len(xs) && !above(xs[i])
			}
		}
		for _, x := range xs {
			if !below(x) && !above(x) {
				return true
			}
		}
		return false
	}}
}

// mayMatch reports whether data file df may hold a row for which the
// bound predicate p holds, by its column bounds (IN lists: see VisitBound
// of filterCompiler).
func mayMatch(df iceberg.DataFile, p iceberg.BoundPredicate) bool {
	ref, isRef := p.Term().(iceberg.BoundReference)
	if !isRef {
		return true
	}
	f := ref.Field()
	lo, hasLo := boundOf(df.LowerBoundValues(), f)
	hi, hasHi := boundOf(df.UpperBoundValues(), f)
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

// boundOf decodes the bound of field f in bounds.
func boundOf(bounds map[int][]byte, f iceberg.NestedField) (any, bool) {
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
