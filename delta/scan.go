package delta

import (
	"context"
	"fmt"
	"iter"

	"github.com/apache/arrow-go/v18/arrow"
)

// ScanOptions configures Snapshot.Scan. The zero value reads all columns.
type ScanOptions struct {
	// Columns lists the logical column names to read, in output order; nil
	// reads all columns in schema order.
	Columns []string
}

// Scan reads the rows of the snapshot: every live data file with its
// deletion vector applied, columns under their logical names (column mapping
// undone), partition columns filled from the add actions and typed per the
// schema. It returns the Arrow schema of the batches and a single-use
// sequence of batches, read one file and one batch at a time so memory stays
// bounded by the batch size. Each batch belongs to the caller, who must
// Release it. Errors found before reading (an unknown column, an unsupported
// type) are returned directly; errors while reading (ErrFileNotFound,
// ErrCorruptDeletionVector, ErrCorruptDataFile, ...) end the sequence with a
// nil batch and the error.
func (s *Snapshot) Scan(ctx context.Context, opts ScanOptions) (*arrow.Schema, iter.Seq2[arrow.RecordBatch, error], error) {
	spec, err := newReadSpec(s.schema, &s.metadata, opts.Columns, false)
	if err != nil {
		return nil, nil, fmt.Errorf("scan of table %s version %d: %w", s.table.root, s.version, err)
	}
	tasks := make([]readTask, len(s.files))
	for i, f := range s.files {
		tasks[i] = readTask{
			location:  f.location,
			what:      fmt.Sprintf("data file %s of table %s version %d", f.add.Path, s.table.root, s.version),
			partition: f.add.PartitionValues,
			sel:       selection{dv: f.add.DeletionVector},
		}
	}
	return spec.schema, s.table.readTasks(ctx, spec, tasks), nil
}

// readTasks reads tasks in order as one sequence of batches.
func (t *Table) readTasks(ctx context.Context, spec *readSpec, tasks []readTask) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		cache := &constCache{}
		defer cache.release()
		for i := range tasks {
			if err := ctx.Err(); err != nil {
				yield(nil, err)
				return
			}
			cont, err := t.readFile(ctx, spec, &tasks[i], cache, func(b arrow.RecordBatch) bool { return yield(b, nil) })
			if err != nil {
				yield(nil, err)
				return
			}
			if !cont {
				return
			}
		}
	}
}
