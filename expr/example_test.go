package expr_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/floedata/floe/expr"
)

func Example() {
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "data", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	rec, _, _ := array.RecordFromJSON(memory.DefaultAllocator, schema,
		strings.NewReader(`[{"id": 3, "data": "x"}, {"id": 7, "data": "x"}, {"id": 9, "data": null}]`))
	defer rec.Release()

	e, err := expr.Parse("id > 5 AND data = 'x'")
	if err != nil {
		panic(err)
	}
	prog, err := expr.Compile(e, schema)
	if err != nil {
		panic(err)
	}
	kept, err := prog.Filter(context.Background(), rec)
	if err != nil {
		panic(err)
	}
	defer kept.Release()
	fmt.Println(kept.NumRows(), "row kept")
	// Output: 1 row kept
}

func ExampleFormatError() {
	src := "id > 5 AND AND data = 'x'"
	_, err := expr.Parse(src)
	fmt.Println(expr.FormatError(src, err))
	// Output:
	// position 11: expected an expression but found "AND"
	// id > 5 AND AND data = 'x'
	//            ^
}

func ExampleToIceberg() {
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 2, Name: "data", Type: iceberg.PrimitiveTypes.String})
	e, _ := expr.Parse("id > 5.5 AND (data LIKE 'ab%' OR LOWER(data) = 'x')")
	filter, exact, err := expr.ToIceberg(e, sc)
	if err != nil {
		panic(err)
	}
	fmt.Println(filter)
	fmt.Println("exact:", exact)
	// Output:
	// GreaterThanEqual(term=Reference(name='id'), literal=6)
	// exact: false
}

func ExampleParseMerge() {
	m, err := expr.ParseMerge(`MERGE INTO db.orders AS t USING 'changes.parquet' AS s ON t.id = s.id
		WHEN MATCHED AND s.op = 'D' THEN DELETE
		WHEN MATCHED THEN UPDATE SET *
		WHEN NOT MATCHED THEN INSERT *`)
	if err != nil {
		panic(err)
	}
	fmt.Println(m.Target, m.Source.Path, len(m.Clauses))
	for _, c := range expr.Columns(m.On) {
		fmt.Println(c.Qualifier(), c.Name())
	}
	// Output:
	// [db orders] changes.parquet 3
	// t id
	// s id
}
