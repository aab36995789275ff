package cli

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/floedata/floe/internal/rows"
)

func projectRec(rec arrow.RecordBatch, schema *arrow.Schema, idx []int) arrow.RecordBatch {
	return rows.Project(rec, schema, idx)
}

func selectRows(ctx context.Context, rec arrow.RecordBatch, keep []bool) (arrow.RecordBatch, error) {
	return rows.Select(ctx, rec, keep)
}
