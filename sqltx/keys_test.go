package sqltx

import (
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestKeyRangePrefilter checks the range existingKeys keeps of the held
// keys: the least and greatest new key (NULLs left out), and no range for
// a non-integer key, so that the session then sees every held key.
func TestKeyRangePrefilter(t *testing.T) {
	b := array.NewInt64Builder(memory.DefaultAllocator)
	b.AppendValues([]int64{7, 3}, nil)
	b.AppendNull()
	b.Append(12)
	arr := b.NewArray()
	sch := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	rec := array.NewRecordBatch(sch, []arrow.Array{arr}, int64(arr.Len()))
	lo, hi, ok := intRange([]arrow.RecordBatch{rec})
	if !ok || lo != 3 || hi != 12 {
		t.Fatalf("range %d..%d (%v), want 3..12", lo, hi, ok)
	}
	ib := array.NewInt32Builder(memory.DefaultAllocator)
	ib.AppendValues([]int32{2, 3, 12, 13}, nil)
	ib.AppendNull()
	held := ib.NewArray()
	keep, ok := inIntRange(held, lo, hi)
	if !ok || fmt.Sprint(keep) != "[false true true false false]" {
		t.Fatalf("kept %v (%v)", keep, ok)
	}
	sb := array.NewStringBuilder(memory.DefaultAllocator)
	sb.Append("a")
	str := sb.NewArray()
	ssch := arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.BinaryTypes.String}}, nil)
	if _, _, ok := intRange([]arrow.RecordBatch{array.NewRecordBatch(ssch, []arrow.Array{str}, 1)}); ok {
		t.Fatal("a range for a string key")
	}
	if _, ok := inIntRange(str, lo, hi); ok {
		t.Fatal("a string column filtered by an integer range")
	}
}
