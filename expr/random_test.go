package expr

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

var (
	seedFlag  = flag.Uint64("expr.seed", 1, "seed of the randomized expr tests")
	itersFlag = flag.Int("expr.iters", 3000, "expressions per randomized expr test")
)

// randSchema has a column of every scalar type the language supports.
var randSchema = arrow.NewSchema([]arrow.Field{
	{Name: "i8", Type: arrow.PrimitiveTypes.Int8, Nullable: true},
	{Name: "i16", Type: arrow.PrimitiveTypes.Int16, Nullable: true},
	{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "i64", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "d52", Type: decType(5, 2), Nullable: true},
	{Name: "d184", Type: decType(18, 4), Nullable: true},
	{Name: "d3810", Type: decType(38, 10), Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "ls", Type: arrow.BinaryTypes.LargeString, Nullable: true},
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "dt", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "tn", Type: &arrow.TimestampType{Unit: arrow.Nanosecond}, Nullable: true},
	{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
}, nil)

var (
	numCols  = []string{"i8", "i16", "i32", "i64", "f32", "f64", "d52", "d184", "d3810"}
	strCols  = []string{"s", "ls"}
	timeCols = []string{"dt", "ts", "tn"}
	strPool  = []string{"", "a", "ab", "abc", "A", "b", "x%y", "a_c", "é", " a ", "ab%", "ba"}
)

// randValue draws a canonical value for a column type, favouring edge
// cases and small domains so comparisons are often true.
func randValue(r *rand.Rand, dt arrow.DataType) any {
	if r.IntN(5) == 0 {
		return nil
	}
	switch familyOf(dt) {
	case famInt:
		lo, hi := intRange(intBits(dt))
		pool := []int64{0, 1, -1, 2, 5, 7, 10, -10, 100, lo, hi, hi - 1, lo + 1}
		if r.IntN(3) == 0 {
			return r.Int64N(41) - 20
		}
		v := pool[r.IntN(len(pool))]
		return max(lo, min(hi, v))
	case famFloat:
		pool := []float64{0, math.Copysign(0, -1), 1.5, -2.25, math.NaN(), math.Inf(1), math.Inf(-1), 1e10, 0.1, 7, 5, -1}
		if r.IntN(3) == 0 {
			return float64(r.IntN(41)-20) / 4
		}
		v := pool[r.IntN(len(pool))]
		if dt.ID() == arrow.FLOAT32 {
			v = float64(float32(v))
		}
		return v
	case famDecimal:
		d := dt.(*arrow.Decimal128Type)
		maxU := new(big.Int).Sub(pow10Big(int(d.Precision)), big.NewInt(1))
		var u *big.Int
		switch r.IntN(6) {
		case 0:
			u = new(big.Int).Set(maxU)
		case 1:
			u = new(big.Int).Neg(maxU)
		case 2:
			u = new(big.Int).Mul(big.NewInt(r.Int64N(21)-10), pow10Big(int(d.Scale)))
		default:
			unit := pow10Big(int(d.Scale)).Int64() // scales stay below 18 here
			u = big.NewInt(r.Int64N(200*unit) - 100*unit)
			if u.CmpAbs(maxU) > 0 {
				u.Rem(u, maxU)
			}
		}
		return decimal128.FromBigInt(u)
	case famString:
		return strPool[r.IntN(len(strPool))]
	case famBinary:
		return []byte(strPool[r.IntN(4)])
	case famBool:
		return r.IntN(2) == 0
	case famDate:
		return int64(19723 + r.IntN(5) - 2) // around 2024-01-01
	case famTimestamp:
		day := int64(19723 + r.IntN(5) - 2)
		us := day*microsPerDay + int64(r.IntN(4))*microsPerDay/4
		if r.IntN(3) == 0 {
			us += int64(r.IntN(3) - 1)
		}
		if dt.(*arrow.TimestampType).Unit == arrow.Nanosecond {
			return us*1000 + int64(r.IntN(3)-1)
		}
		return us
	}
	panic(dt)
}

func randBatch(r *rand.Rand, mem memory.Allocator, n int) arrow.RecordBatch {
	cols := make([]arrow.Array, randSchema.NumFields())
	for i, f := range randSchema.Fields() {
		b := array.NewBuilder(mem, f.Type)
		for k := 0; k < n; k++ {
			appendValue(b, randValue(r, f.Type))
		}
		cols[i] = b.NewArray()
		b.Release()
	}
	rec := array.NewRecordBatch(randSchema, cols, int64(n))
	for _, c := range cols {
		c.Release()
	}
	return rec
}

// exprGen writes random, mostly well-typed SQL.
type exprGen struct{ r *rand.Rand }

func (g *exprGen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

func (g *exprGen) num(d int) string {
	if d <= 0 || g.r.IntN(3) == 0 {
		if g.r.IntN(3) == 0 {
			return g.pick("0", "1", "-1", "2", "7", "100", "5000000000", "1.25", "-0.5", "0.001", "1e3", "2.5e-1", "7Y", "3S", "10L", "99.99", "NULL")
		}
		return g.pick(numCols...)
	}
	a, b := g.num(d-1), g.num(d-1)
	switch g.r.IntN(10) {
	case 0, 1, 2:
		return fmt.Sprintf("(%s %s %s)", a, g.pick("+", "-", "*", "/", "%"), b)
	case 3:
		return fmt.Sprintf("-(%s)", a)
	case 4:
		return fmt.Sprintf("ABS(%s)", a)
	case 5:
		return fmt.Sprintf("CASE WHEN %s THEN %s ELSE %s END", g.boolean(d-1), a, b)
	case 6:
		return fmt.Sprintf("COALESCE(%s, %s)", a, b)
	case 7:
		return fmt.Sprintf("NULLIF(%s, %s)", a, b)
	case 8:
		return fmt.Sprintf("CAST(%s AS %s)", a, g.pick("INT", "BIGINT", "DOUBLE", "FLOAT", "SMALLINT", "DECIMAL(10,2)", "DECIMAL(20,6)"))
	}
	return fmt.Sprintf("LENGTH(%s)", g.str(d-1))
}

func (g *exprGen) str(d int) string {
	if d <= 0 || g.r.IntN(3) == 0 {
		if g.r.IntN(3) == 0 {
			return quoteString(strPool[g.r.IntN(len(strPool))])
		}
		return g.pick(strCols...)
	}
	a, b := g.str(d-1), g.str(d-1)
	switch g.r.IntN(7) {
	case 0:
		return fmt.Sprintf("%s(%s)", g.pick("LOWER", "UPPER", "TRIM"), a)
	case 1:
		return fmt.Sprintf("CONCAT(%s, %s)", a, b)
	case 2:
		return fmt.Sprintf("(%s || %s)", a, b)
	case 3:
		return fmt.Sprintf("COALESCE(%s, %s)", a, b)
	case 4:
		return fmt.Sprintf("CASE WHEN %s THEN %s END", g.boolean(d-1), a)
	case 5:
		return fmt.Sprintf("CAST(%s AS STRING)", g.num(d-1))
	}
	return a
}

func (g *exprGen) temporal(d int) string {
	if d > 0 && g.r.IntN(4) == 0 {
		return fmt.Sprintf("COALESCE(%s, %s)", g.temporal(d-1), g.temporal(d-1))
	}
	return g.pick(append(timeCols, "DATE '2024-01-01'", "TIMESTAMP '2024-01-02 06:00:00'", "TIMESTAMP_NTZ '2023-12-31 23:59:59.999999'")...)
}

func (g *exprGen) op() string { return g.pick("=", "<>", "<", "<=", ">", ">=", "<=>") }

func (g *exprGen) boolean(d int) string {
	if d <= 0 || g.r.IntN(5) == 0 {
		return g.pick("b", "b", "TRUE", "FALSE", "NULL")
	}
	switch g.r.IntN(16) {
	case 0, 1, 2:
		return fmt.Sprintf("(%s %s %s)", g.num(d-1), g.op(), g.num(d-1))
	case 3:
		return fmt.Sprintf("(%s %s %s)", g.str(d-1), g.op(), g.str(d-1))
	case 4:
		t := g.temporal(d - 1)
		if g.r.IntN(2) == 0 {
			return fmt.Sprintf("(%s %s '2024-01-01')", t, g.op())
		}
		return fmt.Sprintf("(%s %s %s)", t, g.op(), g.temporal(d-1))
	case 5:
		return fmt.Sprintf("(%s AND %s)", g.boolean(d-1), g.boolean(d-1))
	case 6:
		return fmt.Sprintf("(%s OR %s)", g.boolean(d-1), g.boolean(d-1))
	case 7:
		return fmt.Sprintf("NOT %s", g.boolean(d-1))
	case 8:
		return fmt.Sprintf("(%s IS %sNULL)", g.pick(g.num(d-1), g.str(d-1), g.temporal(d-1), "bin"), g.pick("", "NOT "))
	case 9:
		return fmt.Sprintf("(%s IS %s%s)", g.boolean(d-1), g.pick("", "NOT "), g.pick("TRUE", "FALSE"))
	case 10:
		items := make([]string, 1+g.r.IntN(4))
		for i := range items {
			if g.r.IntN(3) == 0 {
				items[i] = g.num(d - 1)
			} else {
				items[i] = g.pick("0", "1", "-1", "7", "1.5", "NULL", "5000000000", "2.5e0", "100")
			}
		}
		return fmt.Sprintf("(%s %sIN (%s))", g.num(d-1), g.pick("", "NOT "), strings.Join(items, ", "))
	case 11:
		return fmt.Sprintf("(%s %sIN ('a', 'abc', %s))", g.str(d-1), g.pick("", "NOT "), g.pick("'b'", "NULL", "s"))
	case 12:
		return fmt.Sprintf("(%s %sBETWEEN %s AND %s)", g.num(d-1), g.pick("", "NOT "), g.num(d-1), g.num(d-1))
	case 13:
		pieces := []string{"a", "b", "%", "_", `\%`, `\_`, "é", "c"}
		var p strings.Builder
		for k := 0; k < 1+g.r.IntN(4); k++ {
			p.WriteString(pieces[g.r.IntN(len(pieces))])
		}
		return fmt.Sprintf("(%s %sLIKE %s)", g.str(d-1), g.pick("", "NOT "), quoteString(p.String()))
	case 14:
		return fmt.Sprintf("(%s %s '%s')", g.pick(numCols...), g.op(), g.pick("1", "-1.5", "7", "100"))
	}
	return fmt.Sprintf("CASE WHEN %s THEN %s ELSE %s END", g.boolean(d-1), g.boolean(d-1), g.boolean(d-1))
}

func (g *exprGen) any(d int) string {
	switch g.r.IntN(4) {
	case 0:
		return g.num(d)
	case 1:
		return g.str(d)
	case 2:
		return g.temporal(d)
	}
	return g.boolean(d)
}

// sameValue compares canonical values exactly (NaN equal to NaN).
func sameValue(a, b any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && (x == y && math.Signbit(x) == math.Signbit(y) || math.IsNaN(x) && math.IsNaN(y))
	case []byte:
		y, ok := b.([]byte)
		return ok && string(x) == string(y)
	}
	return a == b
}

// TestRandomAgainstReference compares the vectorized evaluation of random
// expressions on random batches (with NULLs, edge values and slice offsets)
// with the row-at-a-time reference interpreter.
func TestRandomAgainstReference(t *testing.T) {
	r := rand.New(rand.NewPCG(*seedFlag, 0x5eed))
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	g := &exprGen{r: r}
	var compiled, errored, filtered int
	for it := 0; it < *itersFlag; it++ {
		var src string
		if it%2 == 0 {
			src = g.boolean(1 + r.IntN(4))
		} else {
			src = g.any(1 + r.IntN(4))
		}
		e, err := Parse(src)
		if err != nil {
			t.Fatalf("generated SQL does not parse: %s: %v", src, err)
		}
		prog, err := Compile(e, randSchema, WithAllocator(mem))
		if err != nil {
			var be *BindError
			if !errors.As(err, &be) {
				t.Fatalf("Compile(%s): %v is not a *BindError", src, err)
			}
			continue
		}
		compiled++
		full := randBatch(r, mem, 1+r.IntN(80))
		off := r.IntN(int(full.NumRows()))
		rec := full.NewSlice(int64(off), full.NumRows())
		full.Release()

		want := make([]any, rec.NumRows())
		var refErr error
		for i := range want {
			want[i], refErr = refEval(prog.root, rec, i)
			if refErr != nil {
				break
			}
		}
		got, err := prog.Eval(ctx, rec)
		switch {
		case err != nil && refErr == nil:
			t.Fatalf("seed %d: %s: vectorized error %v, reference has none", *seedFlag, src, err)
		case err == nil && refErr != nil:
			got.Release()
			t.Fatalf("seed %d: %s: reference error %v, vectorized has none", *seedFlag, src, refErr)
		case err != nil:
			var ee *EvalError
			if !errors.As(err, &ee) || !(errors.Is(err, ErrDivideByZero) || errors.Is(err, ErrOverflow) || errors.Is(err, ErrInvalidCast)) {
				t.Fatalf("%s: error %v is not an *EvalError of a known kind", src, err)
			}
			if !errors.Is(refErr, ee.Kind) && !(errors.Is(refErr, ErrDivideByZero) || errors.Is(refErr, ErrOverflow) || errors.Is(refErr, ErrInvalidCast)) {
				t.Fatalf("%s: kinds differ: %v vs %v", src, err, refErr)
			}
			errored++
			rec.Release()
			continue
		}
		if !arrow.TypeEqual(got.DataType(), prog.Type()) {
			t.Fatalf("%s: result type %s, program type %s", src, got.DataType(), prog.Type())
		}
		if got.Len() != int(rec.NumRows()) {
			t.Fatalf("%s: %d results for %d rows", src, got.Len(), rec.NumRows())
		}
		gv := getter(got)
		for i := range want {
			if !sameValue(gv(i), want[i]) {
				t.Fatalf("seed %d: %s: row %d: vectorized %v (%s), reference %v\nrow: %s",
					*seedFlag, src, i, formatValue(gv(i), got.DataType()), got.DataType(), formatValue(want[i], got.DataType()), rowString(rec, i))
			}
		}
		got.Release()
		if prog.Type().ID() == arrow.BOOL {
			kept, err := prog.Filter(ctx, rec)
			if err != nil {
				t.Fatalf("%s: Filter: %v", src, err)
			}
			n := 0
			for _, w := range want {
				if w == true {
					n++
				}
			}
			if int(kept.NumRows()) != n {
				t.Fatalf("%s: Filter kept %d rows, want %d", src, kept.NumRows(), n)
			}
			kept.Release()
			filtered++
		}
		rec.Release()
	}
	t.Logf("%d expressions compiled, %d raised evaluation errors, %d filters checked", compiled, errored, filtered)
	if compiled < *itersFlag/2 {
		t.Fatalf("only %d of %d random expressions compiled", compiled, *itersFlag)
	}
}

func rowString(rec arrow.RecordBatch, i int) string {
	var parts []string
	for c := 0; c < int(rec.NumCols()); c++ {
		parts = append(parts, rec.ColumnName(c)+"="+renderCell(rec.Column(c), i))
	}
	return strings.Join(parts, " ")
}
