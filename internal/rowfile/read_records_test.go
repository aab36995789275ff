package rowfile

import (
	"context"
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestFromRecords(t *testing.T) {
	target := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "v", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	src := arrow.NewSchema([]arrow.Field{
		{Name: "V", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
		{Name: "id", Type: arrow.PrimitiveTypes.Int32},
		{Name: "_change_type", Type: arrow.BinaryTypes.String},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, src)
	b.Field(0).(*array.Float32Builder).AppendValues([]float32{1.5, 2}, nil)
	b.Field(1).(*array.Int32Builder).AppendValues([]int32{7, 8}, nil)
	b.Field(2).(*array.StringBuilder).AppendValues([]string{"INSERT", "DELETE"}, nil)
	rec := b.NewRecordBatch()
	b.Release()
	seq := func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) }
	r, err := FromRecords(context.Background(), "changes", src, seq, ReadOptions{Target: target,
		Extra: []arrow.Field{{Name: "_change_type", Type: arrow.BinaryTypes.String}}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !r.Next() {
		t.Fatalf("no batch: %v", r.Err())
	}
	got := r.RecordBatch()
	if got.NumCols() != 4 || got.Column(0).(*array.Int64).Value(1) != 8 || got.Column(1).(*array.Float64).Value(0) != 1.5 ||
		!got.Column(2).IsNull(0) || got.Column(3).(*array.String).Value(1) != "DELETE" {
		t.Fatalf("converted batch %v", got)
	}
	if r.Next() {
		t.Fatal("one batch expected")
	}

	// A narrowing is refused, naming the column.
	bad := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.BinaryTypes.Binary}}, nil)
	_, err = FromRecords(context.Background(), "changes", bad, seq, ReadOptions{Target: target})
	if !errors.Is(err, ErrIncompatibleType) {
		t.Fatalf("want ErrIncompatibleType, got %v", err)
	}
}
