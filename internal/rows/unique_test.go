package rows_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/floedata/floe/internal/rows"
)

// TestUniqueCheck finds the one duplicated key among many unique ones, in
// memory and spilled alike, and reports none when there is none.
func TestUniqueCheck(t *testing.T) {
	ctx := context.Background()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "v", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "a", Type: arrow.PrimitiveTypes.Int64},
		{Name: "b", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	for _, budget := range []int64{1 << 10, 1 << 30} {
		for _, dup := range []bool{false, true} {
			t.Run(fmt.Sprint(budget, dup), func(t *testing.T) {
				u := rows.NewUniqueCheck(schema, []int{1, 2}, budget, t.TempDir())
				defer u.Close()
				for batch := 0; batch < 10; batch++ {
					bld := array.NewRecordBuilder(memory.DefaultAllocator, schema)
					for i := 0; i < 400; i++ {
						n := batch*400 + i
						bld.Field(0).(*array.StringBuilder).Append("same")
						bld.Field(1).(*array.Int64Builder).Append(int64(n / 2))
						if n%2 == 0 {
							bld.Field(2).AppendNull()
						} else {
							bld.Field(2).(*array.StringBuilder).Append("x")
						}
					}
					if dup && batch == 9 {
						bld.Field(0).(*array.StringBuilder).Append("same")
						bld.Field(1).(*array.Int64Builder).Append(17)
						bld.Field(2).(*array.StringBuilder).Append("x")
					}
					rec := bld.NewRecordBatch()
					bld.Release()
					if err := u.Add(ctx, rec); err != nil {
						t.Fatal(err)
					}
					rec.Release()
				}
				d, err := u.Find(ctx)
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case !dup && d != nil:
					t.Fatalf("unique keys reported duplicated: %+v", d)
				case dup && (d == nil || d.Key != `a=17, b="x"` || d.Count != 2):
					t.Fatalf("got %+v, want a=17, b=\"x\" twice", d)
				}
			})
		}
	}
}
