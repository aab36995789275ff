package expr

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func mustCompile(t *testing.T, src string, schema *arrow.Schema, opts ...Option) *Program {
	t.Helper()
	e, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Compile(e, schema, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func jsonBatch(t *testing.T, mem memory.Allocator, schema *arrow.Schema, rows string) arrow.RecordBatch {
	t.Helper()
	rec, _, err := array.RecordFromJSON(mem, schema, strings.NewReader(rows))
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

var apiSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "data", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

func TestProgramErrors(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	ctx := context.Background()
	rec := jsonBatch(t, mem, apiSchema, `[{"id": 1, "data": "a"}, {"id": 0, "data": null}]`)
	defer rec.Release()

	p := mustCompile(t, "id + 1", apiSchema, WithAllocator(mem))
	if got := p.Type(); !arrow.TypeEqual(got, arrow.PrimitiveTypes.Int64) {
		t.Fatalf("Type() = %s", got)
	}
	if p.String() != "id + 1" || p.Expr() == nil {
		t.Fatalf("String() = %q", p.String())
	}
	if _, err := p.Filter(ctx, rec); !errors.Is(err, ErrType) {
		t.Fatalf("Filter of a non-boolean = %v, want ErrType", err)
	}
	if _, err := p.Mask(ctx, rec); !errors.Is(err, ErrType) {
		t.Fatalf("Mask of a non-boolean = %v, want ErrType", err)
	}

	div := mustCompile(t, "10 / id > 1", apiSchema, WithAllocator(mem))
	_, err := div.Eval(ctx, rec)
	var ee *EvalError
	if !errors.As(err, &ee) || !errors.Is(err, ErrDivideByZero) || ee.Row != 1 || ee.Expr != "10 / id" || ee.Pos != 0 {
		t.Fatalf("Eval = %#v, want division by zero in 10 / id at row 1", err)
	}
	if _, err := div.Filter(ctx, rec); !errors.Is(err, ErrDivideByZero) {
		t.Fatalf("Filter = %v, want ErrDivideByZero", err)
	}

	// a batch of another shape is refused
	other := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "data", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	bad := jsonBatch(t, mem, other, `[{"id": "1", "data": "a"}]`)
	defer bad.Release()
	if _, err := p.Eval(ctx, bad); !errors.Is(err, ErrSchemaMismatch) {
		t.Fatalf("Eval on another schema = %v, want ErrSchemaMismatch", err)
	}
	short := jsonBatch(t, mem, arrow.NewSchema(apiSchema.Fields()[:1], nil), `[{"id": 1}]`)
	defer short.Release()
	if _, err := p.Eval(ctx, short); !errors.Is(err, ErrSchemaMismatch) {
		t.Fatalf("Eval on fewer columns = %v, want ErrSchemaMismatch", err)
	}
	// an equal schema built separately is fine
	same := jsonBatch(t, mem, arrow.NewSchema(apiSchema.Fields(), nil), `[{"id": 5, "data": "z"}]`)
	defer same.Release()
	out, err := p.Eval(ctx, same)
	if err != nil {
		t.Fatal(err)
	}
	if out.(*array.Int64).Value(0) != 6 {
		t.Fatalf("got %v", out)
	}
	out.Release()
}

func TestBindErrors(t *testing.T) {
	tests := []struct {
		src  string
		kind error
		pos  int
		msg  string
	}{
		{"nope > 1", ErrUnknownColumn, 0, "unknown column nope; available columns: id, data"},
		{"id > 1 AND data = 2", ErrType, 16, `cannot compare string column "data" with number 2`},
		{"id + data", ErrType, 3, `cannot apply "+" to bigint column "id" and string column "data"`},
		{"-data", ErrType, 0, `cannot negate string column "data"`},
		{"NOT id", ErrType, 4, `NOT needs a boolean operand but found bigint column "id"`},
		{"id > '2024-01-01'", ErrInvalidCast, 5, `cannot compare bigint column "id" with string '2024-01-01': it is not a number`},
		{"CAST('x' AS INT) = id", ErrInvalidCast, 0, `string 'x' is not a number`},
		{"CAST(data AS DATE) IS NULL", nil, 0, ""},
		{"data LIKE id", ErrUnsupported, 10, "LIKE needs a constant string pattern"},
		{"CASE WHEN id > 1 THEN 1 ELSE 'x' END", ErrType, 29, "CASE has incompatible types"},
	}
	for _, tt := range tests {
		e, err := Parse(tt.src)
		if err != nil {
			t.Fatal(err)
		}
		_, err = Compile(e, apiSchema)
		if tt.kind == nil {
			if err != nil {
				t.Errorf("Compile(%q) = %v", tt.src, err)
			}
			continue
		}
		var be *BindError
		if !errors.As(err, &be) || !errors.Is(err, tt.kind) || be.Pos != tt.pos || !strings.Contains(be.Msg, tt.msg) {
			t.Errorf("Compile(%q) = %v, want %v at %d containing %q", tt.src, err, tt.kind, tt.pos, tt.msg)
		}
	}
}

// TestConcurrentEval runs one Program from several goroutines: a Program
// is immutable after Compile.
func TestConcurrentEval(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	rec := jsonBatch(t, mem, apiSchema, `[{"id": 1, "data": "ab"}, {"id": 7, "data": "x"}, {"id": null, "data": "abc"}, {"id": 9, "data": null}]`)
	defer rec.Release()
	p := mustCompile(t, "CASE WHEN id IN (1, 9) THEN data LIKE 'a%' ELSE COALESCE(data, 'z') || '!' = 'x!' END", apiSchema, WithAllocator(mem))
	want := []string{"true", "true", "false", "NULL"}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < 200; k++ {
				out, err := p.Eval(context.Background(), rec)
				if err != nil {
					errs <- err
					return
				}
				for i, w := range want {
					if got := renderCell(out, i); got != w {
						errs <- errors.New("row " + string(rune('0'+i)) + ": got " + got + ", want " + w)
					}
				}
				out.Release()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
