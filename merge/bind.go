package merge

import (
	"fmt"
	"path"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/floedata/floe/expr"
)

// plan is a MERGE statement bound to a target table's schema and a
// source's schema: aliases resolved, the ON condition split into join keys
// and a residual, every clause compiled against the rows it sees.
//
// Four row shapes are involved, each a schema of qualified field names
// ("t.id", "s.id") so that expr.Compile resolves t.x and s.x literally and
// an unqualified x when exactly one side has it:
//
//	matchSchema  t.<match columns> + s.<all>  ON residual, WHEN MATCHED conditions (match pass)
//	fullSchema   t.<all> + s.<all>            WHEN MATCHED conditions and SET (rewrite pass)
//	tMatch/tFull t.<match columns> / t.<all>   WHEN NOT MATCHED BY SOURCE (target rows only)
//	sSchema      s.<all>                      WHEN NOT MATCHED (source rows only)
type plan struct {
	stmt           *expr.Merge
	tAlias, sAlias string
	target         *arrow.Schema // the table's Arrow schema
	source         *arrow.Schema // the source's Arrow schema
	keys           []keyPair
	residualSrc    expr.Expr     // the ON conjuncts that are not join keys, ANDed; nil when none
	residual       *expr.Program // residualSrc on matchSchema
	targetOnly     []expr.Expr   // ON conjuncts on target columns only (unqualified), for pruning
	matchCols      []int         // target columns read by the match pass, in table order
	keyInMatch     []int         // per key: its column in the match batch
	checkCard      bool
	matched        []*clause
	notMatched     []*clause
	bySource       []*clause

	matchSchema, fullSchema, tMatch, tFull, sSchema *arrow.Schema
}

// keyPair is one equi-join conjunct t.a = s.b of the ON condition.
type keyPair struct {
	tCol, sCol int            // column in the target / source schema
	hash       arrow.DataType // both sides are converted to it to hash; nil when they hash alike as they are
}

// clause is one WHEN clause, compiled.
type clause struct {
	n      int // 1-based position among the statement's clauses
	src    expr.MergeClause
	action expr.ActionKind
	// cond is the AND condition on the match-pass rows (matchSchema or
	// tMatch), condFull on the rewrite/insert rows (fullSchema, tFull or
	// sSchema); both nil when the clause has none.
	cond, condFull *expr.Program
	// values holds, per target column, the program computing the column's
	// new value (UPDATE) or inserted value (INSERT), cast to the column's
	// type; nil keeps the target's value (UPDATE) or is NULL (INSERT).
	values []*expr.Program
}

// String names the clause: "WHEN MATCHED clause 2" (counting every WHEN
// clause of the statement from 1).
func (c *clause) String() string {
	return fmt.Sprintf("WHEN %s clause %d", c.src.Match, c.n)
}

// at names the clause with its position, for errors without a caret.
func (c *clause) at() string {
	return fmt.Sprintf("%s (position %d)", c, c.src.Pos)
}

func (c *clause) isUpdate() bool {
	return c.action == expr.ActionUpdate || c.action == expr.ActionUpdateAll
}

// badf returns an ErrBadMerge error.
func badf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadMerge, fmt.Sprintf(format, args...))
}

// defaultSourceAlias is the name a source is known by without an alias:
// the last part of a table name, a file's base name without extension.
func defaultSourceAlias(stmt *expr.Merge, name string) string {
	if name != "" {
		return name
	}
	if len(stmt.Source.Table) > 0 {
		return stmt.Source.Table[len(stmt.Source.Table)-1]
	}
	base := path.Base(strings.ReplaceAll(stmt.Source.Path, "\\", "/"))
	if i := strings.IndexByte(base, '.'); i > 0 {
		base = base[:i]
	}
	return base
}

// qualified returns the fields of s at cols (nil = all) renamed
// alias.name, nullable, without metadata.
func qualified(alias string, s *arrow.Schema, cols []int) []arrow.Field {
	if cols == nil {
		cols = seqInts(s.NumFields())
	}
	out := make([]arrow.Field, len(cols))
	for i, c := range cols {
		f := s.Field(c)
		out[i] = arrow.Field{Name: alias + "." + f.Name, Type: f.Type, Nullable: true}
	}
	return out
}

func schemaOf(parts ...[]arrow.Field) *arrow.Schema {
	var fields []arrow.Field
	for _, p := range parts {
		fields = append(fields, p...)
	}
	return arrow.NewSchema(fields, nil)
}

// findCol finds a top-level column by name: exact spelling first, then a
// unique case-insensitive match; -1 when none.
func findCol(s *arrow.Schema, name string) int {
	found := -1
	for i, f := range s.Fields() {
		if f.Name == name {
			return i
		}
		if strings.EqualFold(f.Name, name) {
			if found >= 0 {
				return -1
			}
			found = i
		}
	}
	return found
}

// bind resolves stmt against the target and source schemas. Every error
// wraps ErrBadMerge (and the expr sentinel of the problem).
func bind(stmt *expr.Merge, target, source *arrow.Schema, sourceName string) (*plan, error) {
	p := &plan{stmt: stmt, target: target, source: source}
	p.tAlias = stmt.TargetAlias
	if p.tAlias == "" {
		p.tAlias = stmt.Target[len(stmt.Target)-1]
	}
	p.sAlias = stmt.SourceAlias
	if p.sAlias == "" {
		p.sAlias = defaultSourceAlias(stmt, sourceName)
	}
	if strings.EqualFold(p.tAlias, p.sAlias) {
		return nil, badf("the target and the source are both known as %q: give one of them an alias (MERGE INTO ... AS t USING ... AS s)", p.tAlias)
	}
	for i, f := range source.Fields() {
		for _, g := range source.Fields()[:i] {
			if strings.EqualFold(f.Name, g.Name) {
				return nil, badf("the source has two columns named %q and %q", g.Name, f.Name)
			}
		}
	}
	tAll, sAll := qualified(p.tAlias, target, nil), qualified(p.sAlias, source, nil)
	p.fullSchema = schemaOf(tAll, sAll)
	p.tFull = schemaOf(tAll)
	p.sSchema = schemaOf(sAll)

	if err := p.splitOn(); err != nil {
		return nil, err
	}
	for i, c := range stmt.Clauses {
		cl := &clause{n: i + 1, src: c, action: c.Action}
		switch c.Match {
		case expr.Matched:
			p.matched = append(p.matched, cl)
		case expr.NotMatched:
			p.notMatched = append(p.notMatched, cl)
		case expr.NotMatchedBySource:
			p.bySource = append(p.bySource, cl)
		}
	}
	// Spark skips the cardinality check without MATCHED clauses, and with
	// a single unconditional MATCHED ... DELETE (RewriteMergeIntoTable's
	// shouldCheckCardinality).
	p.checkCard = !(len(p.matched) == 0 ||
		(len(p.matched) == 1 && p.matched[0].action == expr.ActionDelete && p.matched[0].src.Cond == nil))

	// Which target columns the match pass reads: the join keys, and what
	// the residual ON and the MATCHED / NOT MATCHED BY SOURCE conditions
	// refer to.
	need := make([]bool, target.NumFields())
	for _, k := range p.keys {
		need[k.tCol] = true
	}
	p.markTargetRefs(need, p.residualSrc)
	for _, c := range append(append([]*clause{}, p.matched...), p.bySource...) {
		p.markTargetRefs(need, c.src.Cond)
	}
	for i, n := range need {
		if n {
			p.matchCols = append(p.matchCols, i)
		}
	}
	for _, k := range p.keys {
		for j, c := range p.matchCols {
			if c == k.tCol {
				p.keyInMatch = append(p.keyInMatch, j)
			}
		}
	}
	tMatchFields := qualified(p.tAlias, target, p.matchCols)
	p.matchSchema = schemaOf(tMatchFields, sAll)
	p.tMatch = schemaOf(tMatchFields)

	if p.residualSrc != nil {
		prog, err := p.compileCond(p.residualSrc, p.matchSchema, "ON condition")
		if err != nil {
			return nil, err
		}
		p.residual = prog
	}
	for _, c := range p.matched {
		if err := p.bindClause(c, p.matchSchema, p.fullSchema); err != nil {
			return nil, err
		}
	}
	for _, c := range p.bySource {
		if err := p.bindClause(c, p.tMatch, p.tFull); err != nil {
			return nil, err
		}
	}
	for _, c := range p.notMatched {
		if err := p.bindClause(c, nil, p.sSchema); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// compileCond compiles a boolean condition.
func (p *plan) compileCond(e expr.Expr, schema *arrow.Schema, what string) (*expr.Program, error) {
	prog, err := expr.Compile(e, schema)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrBadMerge, what, err)
	}
	switch prog.Type().ID() {
	case arrow.BOOL, arrow.NULL:
	default:
		return nil, fmt.Errorf("%w: %s: %w", ErrBadMerge, what, &expr.BindError{Pos: e.Pos(), Kind: expr.ErrType,
			Msg: fmt.Sprintf("%s is %s, not a boolean condition", e, typeName(prog.Type()))})
	}
	return prog, nil
}

// conjuncts flattens a tree of ANDs.
func conjuncts(e expr.Expr) []expr.Expr {
	if b, ok := e.(*expr.Binary); ok && b.Op == expr.OpAnd {
		return append(conjuncts(b.L), conjuncts(b.R)...)
	}
	return []expr.Expr{e}
}

type side int

const (
	sideNone side = iota
	sideTarget
	sideSource
	sideBoth
)

// sideOf says which relation a column reference belongs to and, for a
// plain top-level column, its index there (-1 for nested references).
func (p *plan) sideOf(ref *expr.ColumnRef) (side, int) {
	parts := ref.Parts
	if len(parts) >= 2 {
		var s *arrow.Schema
		sd := sideNone
		switch {
		case strings.EqualFold(parts[0], p.tAlias):
			s, sd = p.target, sideTarget
		case strings.EqualFold(parts[0], p.sAlias):
			s, sd = p.source, sideSource
		}
		if s != nil {
			if c := findCol(s, parts[1]); c >= 0 {
				if len(parts) == 2 {
					return sd, c
				}
				return sd, -1
			}
		}
	}
	t, s := findCol(p.target, parts[0]), findCol(p.source, parts[0])
	switch {
	case t >= 0 && s >= 0:
		return sideBoth, -1
	case t >= 0:
		if len(parts) == 1 {
			return sideTarget, t
		}
		return sideTarget, -1
	case s >= 0:
		if len(parts) == 1 {
			return sideSource, s
		}
		return sideSource, -1
	}
	return sideNone, -1
}

// splitOn checks the ON condition and splits it into equi-join keys
// (t.a = s.b between plain columns whose values hash alike after a
// widening) and a residual condition evaluated on joined rows.
func (p *plan) splitOn() error {
	if _, err := p.compileCond(p.stmt.On, p.fullSchema, "ON condition"); err != nil {
		return err
	}
	var rest []expr.Expr
	for _, c := range conjuncts(p.stmt.On) {
		if k, ok := p.equiKey(c); ok {
			p.keys = append(p.keys, k)
			continue
		}
		rest = append(rest, c)
		sides := map[side]bool{}
		for _, ref := range expr.Columns(c) {
			sd, _ := p.sideOf(&ref)
			sides[sd] = true
		}
		if len(sides) == 1 && sides[sideTarget] {
			p.targetOnly = append(p.targetOnly, expr.Unqualify(c, p.tAlias))
		}
	}
	if len(p.keys) == 0 {
		return fmt.Errorf("%w: %w", ErrBadMerge, &expr.BindError{Pos: p.stmt.On.Pos(), Kind: expr.ErrUnsupported,
			Msg: fmt.Sprintf("the ON condition %s has no equality between a target column and a source column (such as %s.id = %s.id); MERGE joins on such equalities",
				p.stmt.On, p.tAlias, p.sAlias)})
	}
	for _, r := range rest {
		if p.residualSrc == nil {
			p.residualSrc = r
		} else {
			p.residualSrc = &expr.Binary{OpPos: r.Pos(), Op: expr.OpAnd, L: p.residualSrc, R: r}
		}
	}
	return nil
}

// equiKey recognizes t.a = s.b (either order) between plain columns.
func (p *plan) equiKey(e expr.Expr) (keyPair, bool) {
	b, ok := e.(*expr.Binary)
	if !ok || b.Op != expr.OpEq {
		return keyPair{}, false
	}
	l, lok := b.L.(*expr.ColumnRef)
	r, rok := b.R.(*expr.ColumnRef)
	if !lok || !rok {
		return keyPair{}, false
	}
	ls, lc := p.sideOf(l)
	rs, rc := p.sideOf(r)
	if lc < 0 || rc < 0 {
		return keyPair{}, false
	}
	if ls == sideSource && rs == sideTarget {
		ls, rs, lc, rc = rs, ls, rc, lc
	}
	if ls != sideTarget || rs != sideSource {
		return keyPair{}, false
	}
	h, ok := hashType(p.target.Field(lc).Type, p.source.Field(rc).Type)
	if !ok {
		return keyPair{}, false
	}
	return keyPair{tCol: lc, sCol: rc, hash: h}, true
}

// markTargetRefs sets need for every target column e may refer to. It may
// mark too many (a source column spelled like a target one), never too few.
func (p *plan) markTargetRefs(need []bool, e expr.Expr) {
	if e == nil {
		return
	}
	for _, ref := range expr.Columns(e) {
		if c := findCol(p.target, ref.Parts[0]); c >= 0 {
			need[c] = true
		}
		if len(ref.Parts) >= 2 && strings.EqualFold(ref.Parts[0], p.tAlias) {
			if c := findCol(p.target, ref.Parts[1]); c >= 0 {
				need[c] = true
			}
		}
	}
}

// bindClause compiles a clause's condition (against matchSchema for the
// match pass when not nil, and against full) and its values.
func (p *plan) bindClause(c *clause, matchSchema, full *arrow.Schema) error {
	if c.src.Cond != nil {
		what := c.String() + " condition"
		var err error
		if c.condFull, err = p.compileCond(c.src.Cond, full, what); err != nil {
			return err
		}
		if matchSchema != nil {
			if c.cond, err = p.compileCond(c.src.Cond, matchSchema, what); err != nil {
				return err
			}
		}
	}
	c.values = make([]*expr.Program, p.target.NumFields())
	switch c.action {
	case expr.ActionDelete:
		return nil
	case expr.ActionUpdateAll, expr.ActionInsertAll:
		verb := "UPDATE SET *"
		if c.action == expr.ActionInsertAll {
			verb = "INSERT *"
		}
		var missing []string
		for i, f := range p.target.Fields() {
			s := findCol(p.source, f.Name)
			if s < 0 {
				missing = append(missing, f.Name)
				continue
			}
			ref := &expr.ColumnRef{P: c.src.Pos, Parts: []string{p.sAlias, p.source.Field(s).Name}}
			if err := p.bindValue(c, i, ref, full, verb); err != nil {
				return err
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("%w: %s: %w", ErrBadMerge, c, &expr.BindError{Pos: c.src.Pos, Kind: expr.ErrUnknownColumn,
				Msg: fmt.Sprintf("%s needs every target column in the source, as Spark does; the source (columns %s) has no %s",
					verb, fieldNames(p.source), strings.Join(missing, ", "))})
		}
	case expr.ActionUpdate:
		for _, a := range c.src.Set {
			col, err := p.targetColumn(a.Column, c)
			if err != nil {
				return err
			}
			if c.values[col] != nil {
				return fmt.Errorf("%w: %s: %w", ErrBadMerge, c, &expr.BindError{Pos: a.Column.P, Kind: expr.ErrType,
					Msg: fmt.Sprintf("column %s is assigned more than once", p.target.Field(col).Name)})
			}
			if err := p.bindValue(c, col, a.Value, full, "UPDATE SET "+p.target.Field(col).Name); err != nil {
				return err
			}
		}
	case expr.ActionInsert:
		given := make([]bool, p.target.NumFields())
		for i, ref := range c.src.Columns {
			col, err := p.targetColumn(ref, c)
			if err != nil {
				return err
			}
			if given[col] {
				return fmt.Errorf("%w: %s: %w", ErrBadMerge, c, &expr.BindError{Pos: ref.P, Kind: expr.ErrType,
					Msg: fmt.Sprintf("column %s is listed more than once", p.target.Field(col).Name)})
			}
			given[col] = true
			if err := p.bindValue(c, col, c.src.Values[i], full, "INSERT value for "+p.target.Field(col).Name); err != nil {
				return err
			}
		}
		for i, f := range p.target.Fields() {
			if !given[i] && !f.Nullable {
				return badf("%s: INSERT gives no value for column %s, which is NOT NULL", c.at(), f.Name)
			}
		}
	}
	return nil
}

// targetColumn resolves the column an assignment or INSERT list names: a
// top-level target column, optionally qualified by the target alias.
func (p *plan) targetColumn(ref *expr.ColumnRef, c *clause) (int, error) {
	parts := ref.Parts
	if len(parts) == 2 && strings.EqualFold(parts[0], p.tAlias) {
		parts = parts[1:]
	}
	if len(parts) != 1 {
		return 0, fmt.Errorf("%w: %s: %w", ErrBadMerge, c, &expr.BindError{Pos: ref.P, Kind: expr.ErrUnsupported,
			Msg: fmt.Sprintf("%s is not a top-level column of the target (nested fields cannot be assigned)", ref)})
	}
	col := findCol(p.target, parts[0])
	if col < 0 {
		return 0, fmt.Errorf("%w: %s: %w", ErrBadMerge, c, &expr.BindError{Pos: ref.P, Kind: expr.ErrUnknownColumn,
			Msg: fmt.Sprintf("%s is not a column of the target (columns: %s)", ref, fieldNames(p.target))})
	}
	return col, nil
}

// bindValue compiles the value assigned to target column col: it must be
// assignable under Spark's ANSI store-assignment rules, and is cast to the
// column's type.
func (p *plan) bindValue(c *clause, col int, value expr.Expr, schema *arrow.Schema, what string) error {
	f := p.target.Field(col)
	raw, err := expr.Compile(value, schema)
	if err != nil {
		return fmt.Errorf("%w: %s: %s: %w", ErrBadMerge, c, what, err)
	}
	if !storeAssignable(raw.Type(), f.Type) {
		return fmt.Errorf("%w: %s: %s: %w", ErrBadMerge, c, what, &expr.BindError{Pos: value.Pos(), Kind: expr.ErrType,
			Msg: fmt.Sprintf("cannot assign %s %s to column %s of type %s: Spark's store assignment allows numbers into numbers, dates and timestamps into each other, and any value into a string; convert it with CAST",
				typeName(raw.Type()), value, f.Name, typeName(f.Type))})
	}
	prog, err := expr.Compile(&expr.Cast{P: value.Pos(), X: value, To: f.Type}, schema)
	if err != nil {
		return fmt.Errorf("%w: %s: %s: %w", ErrBadMerge, c, what, err)
	}
	c.values[col] = prog
	return nil
}

// typeName renders a type for messages, in lower case.
func typeName(dt arrow.DataType) string {
	switch dt.(type) {
	case arrow.NestedType:
		return dt.String()
	}
	return strings.ToLower(expr.TypeSQL(dt))
}

// storeAssignable is Spark's Cast.canANSIStoreAssign on the Arrow types
// floe reads: equal types, NULL into anything, numbers into numbers, any
// atomic value into a string, dates and timestamps into each other, and
// lists, maps and structs element by element.
func storeAssignable(from, to arrow.DataType) bool {
	if arrow.TypeEqual(from, to) || from.ID() == arrow.NULL {
		return true
	}
	num := func(dt arrow.DataType) bool {
		switch dt.ID() {
		case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
			arrow.FLOAT32, arrow.FLOAT64, arrow.DECIMAL128, arrow.DECIMAL256:
			return true
		}
		return false
	}
	datetime := func(dt arrow.DataType) bool {
		return dt.ID() == arrow.DATE32 || dt.ID() == arrow.DATE64 || dt.ID() == arrow.TIMESTAMP
	}
	str := func(dt arrow.DataType) bool { return dt.ID() == arrow.STRING || dt.ID() == arrow.LARGE_STRING }
	bin := func(dt arrow.DataType) bool {
		return dt.ID() == arrow.BINARY || dt.ID() == arrow.LARGE_BINARY || dt.ID() == arrow.FIXED_SIZE_BINARY
	}
	switch {
	case num(from) && num(to), datetime(from) && datetime(to), str(from) && str(to), bin(from) && bin(to):
		return true
	case str(to):
		_, nested := from.(arrow.NestedType)
		return !nested
	}
	switch f := from.(type) {
	case *arrow.ListType:
		t, ok := to.(*arrow.ListType)
		return ok && (t.ElemField().Nullable || !f.ElemField().Nullable) && storeAssignable(f.Elem(), t.Elem())
	case *arrow.MapType:
		t, ok := to.(*arrow.MapType)
		return ok && (t.ItemField().Nullable || !f.ItemField().Nullable) &&
			storeAssignable(f.KeyType(), t.KeyType()) && storeAssignable(f.ItemType(), t.ItemType())
	case *arrow.StructType:
		t, ok := to.(*arrow.StructType)
		if !ok || f.NumFields() != t.NumFields() {
			return false
		}
		for i := 0; i < f.NumFields(); i++ {
			ff, tf := f.Field(i), t.Field(i)
			if (ff.Nullable && !tf.Nullable) || !storeAssignable(ff.Type, tf.Type) {
				return false
			}
		}
		return true
	}
	return false
}

// hashType returns the type both sides of an equi-join key are converted
// to before hashing (nil: they hash alike as they are: equal types,
// integers of any width, strings, binaries), and false when the types are
// better compared by the residual condition.
func hashType(a, b arrow.DataType) (arrow.DataType, bool) {
	family := func(dt arrow.DataType) string {
		switch dt.ID() {
		case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64:
			return "int"
		case arrow.STRING, arrow.LARGE_STRING:
			return "string"
		case arrow.BINARY, arrow.LARGE_BINARY:
			return "binary"
		case arrow.FLOAT32, arrow.FLOAT64:
			return "float"
		case arrow.DECIMAL128:
			return "decimal"
		case arrow.TIMESTAMP:
			return "timestamp"
		}
		return dt.ID().String()
	}
	fa, fb := family(a), family(b)
	switch {
	case arrow.TypeEqual(a, b):
		return nil, true
	case fa == fb && (fa == "int" || fa == "string" || fa == "binary" || fa == "float"):
		// rows.AppendValue encodes these alike whatever the width
		return nil, true
	case (fa == "float" || fa == "int") && (fb == "float" || fb == "int"):
		return arrow.PrimitiveTypes.Float64, true
	case (fa == "decimal" || fa == "int") && (fb == "decimal" || fb == "int"):
		scale := int32(0)
		digits := int32(0)
		for _, dt := range []arrow.DataType{a, b} {
			if d, ok := dt.(*arrow.Decimal128Type); ok {
				scale = max(scale, d.Scale)
				digits = max(digits, d.Precision-d.Scale)
			} else {
				digits = max(digits, 19)
			}
		}
		if digits+scale > 38 {
			return nil, false
		}
		return &arrow.Decimal128Type{Precision: 38, Scale: scale}, true
	case fa == "timestamp" && fb == "timestamp":
		ta, tb := a.(*arrow.TimestampType), b.(*arrow.TimestampType)
		if (ta.TimeZone == "") != (tb.TimeZone == "") {
			return nil, false
		}
		return &arrow.TimestampType{Unit: max(ta.Unit, tb.Unit), TimeZone: ta.TimeZone}, true
	}
	return nil, false
}
