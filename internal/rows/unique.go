package rows

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
)

// UniqueCheck finds a key that occurs in more than one row of a stream, in
// bounded memory: the key columns of the rows added are hash-partitioned
// (spilled to disk past the budget, see Partitioner) and each partition is
// checked on its own. Keys compare as AppendKey compares them (NULL equals
// NULL). It is not safe for concurrent use; Close must be called.
type UniqueCheck struct {
	keySchema *arrow.Schema
	cols      []int
	p         *Partitioner
}

// NewUniqueCheck checks the columns keyCols of rows of schema. budget <= 0
// means DefaultMemoryBudget; tmpDir "" means os.TempDir().
func NewUniqueCheck(schema *arrow.Schema, keyCols []int, budget int64, tmpDir string) *UniqueCheck {
	fields := make([]arrow.Field, len(keyCols))
	all := make([]int, len(keyCols))
	for i, c := range keyCols {
		fields[i] = schema.Field(c)
		all[i] = i
	}
	ks := arrow.NewSchema(fields, nil)
	return &UniqueCheck{keySchema: ks, cols: keyCols, p: NewPartitioner(ks, all, budget, tmpDir)}
}

// Add adds the keys of the rows of rec (the caller keeps its reference).
func (u *UniqueCheck) Add(ctx context.Context, rec arrow.RecordBatch) error {
	k := Project(rec, u.keySchema, u.cols)
	defer k.Release()
	return u.p.Add(ctx, k)
}

// Duplicate is a key found in more than one row.
type Duplicate struct {
	Key   string // the key rendered by FormatKey: "name=value, ..."
	Count int    // rows with that key
}

// Find returns a duplicated key (the one with the most rows among the
// partition where one was first found), or nil when every key is unique.
// It may be called once, after the last Add.
func (u *UniqueCheck) Find(ctx context.Context) (*Duplicate, error) {
	all := make([]int, len(u.cols))
	for i := range all {
		all[i] = i
	}
	var buf []byte
	for recs, err := range u.p.Partitions() {
		if err != nil {
			return nil, err
		}
		counts := map[string]int{}
		var best *Duplicate
		for _, rec := range recs {
			for i := range int(rec.NumRows()) {
				buf = AppendKey(buf[:0], rec, all, i)
				n := counts[string(buf)] + 1
				counts[string(buf)] = n
				if n > 1 && (best == nil || n > best.Count) {
					best = &Duplicate{Key: FormatKey(rec, all, i), Count: n}
				}
			}
		}
		releaseAll(recs)
		if best != nil {
			return best, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

// Close releases the buffered keys and removes spill files.
func (u *UniqueCheck) Close() { u.p.Close() }
