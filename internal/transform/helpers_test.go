package transform_test

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func formatID(id int64) string { return strconv.FormatInt(id, 10) }

// setColumn returns the touched rows of rec with column col set to val
// ("NULL" for NULL).
func setColumn(rec arrow.RecordBatch, touched []bool, col, val string) (arrow.RecordBatch, error) {
	b := array.NewRecordBuilder(memory.DefaultAllocator, rec.Schema())
	defer b.Release()
	ci := rec.Schema().FieldIndices(col)
	if len(ci) != 1 {
		return nil, fmt.Errorf("no column %s", col)
	}
	for i, t := range touched {
		if !t {
			continue
		}
		for c := 0; c < int(rec.NumCols()); c++ {
			var v string
			null := false
			if c == ci[0] {
				v, null = val, strings.EqualFold(val, "null")
			} else {
				null = rec.Column(c).IsNull(i)
				if !null {
					v = rec.Column(c).ValueStr(i)
				}
			}
			if null {
				b.Field(c).AppendNull()
			} else if err := b.Field(c).AppendValueFromString(v); err != nil {
				return nil, err
			}
		}
	}
	return b.NewRecordBatch(), nil
}
