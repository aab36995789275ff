package bench

import (
	"context"
	"fmt"
	"iter"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/internal/ddl"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/tableops"
)

// Namespace is the namespace Env creates its tables in.
const Namespace = "bench"

// Env is an embedded floe catalog in a scratch warehouse folder, with the
// namespace Namespace. It is not safe for concurrent use.
type Env struct {
	Ctx context.Context
	Cat *catalog.Catalog
}

// Open opens (creating when missing) the embedded catalog in warehouse
// and its namespace. The caller closes the Env.
func Open(ctx context.Context, warehouse string) (*Env, error) {
	cat, err := catalog.Open(ctx, catalog.Options{Warehouse: warehouse})
	if err != nil {
		return nil, err
	}
	if err := cat.CreateNamespace(ctx, table.Identifier{Namespace}, true); err != nil {
		cat.Close()
		return nil, err
	}
	return &Env{Ctx: ctx, Cat: cat}, nil
}

// Close closes the catalog.
func (e *Env) Close() error { return e.Cat.Close() }

// Ident is the identifier of table name in Namespace.
func Ident(name string) table.Identifier { return table.Identifier{Namespace, name} }

// Target is table name (main branch) for tableops.
func (e *Env) Target(name string) tableops.Target {
	return tableops.Target{Catalog: e.Cat, Ident: Ident(name)}
}

// Create creates table name with columns (ddl.ParseSchema syntax), a
// partition list (ddl.ParsePartitionSpec syntax, "" = unpartitioned) and
// table properties.
func (e *Env) Create(name, columns, partition string, props iceberg.Properties) (*table.Table, error) {
	sc, err := ddl.ParseSchema(columns, nil)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", name, err)
	}
	spec, err := ddl.ParsePartitionSpec(partition, sc)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", name, err)
	}
	return tableops.Create(e.Ctx, e.Cat, Ident(name), sc, spec, props)
}

// Load loads table name.
func (e *Env) Load(name string) (*table.Table, error) { return e.Cat.Load(e.Ctx, Ident(name)) }

// ArrowSchema is the Arrow schema floe reads and writes tbl's rows in
// (with field ids), as scan.Reader.ArrowSchema gives it.
func ArrowSchema(ctx context.Context, tbl *table.Table) (*arrow.Schema, error) {
	r, err := scan.NewReader(ctx, tbl, nil)
	if err != nil {
		return nil, err
	}
	as, _, err := r.ArrowSchema(nil)
	return as, err
}

// Append appends the rows records produces to table name in one snapshot
// through floe (tableops.Append) and returns the table after the commit.
func (e *Env) Append(name string, records func() iter.Seq2[arrow.RecordBatch, error]) (*table.Table, error) {
	out, err := tableops.Append(e.Ctx, e.Target(name), records)
	if err != nil {
		return nil, err
	}
	return out.Table, nil
}

// IDPredicate selects the rows whose id column (a long) satisfies f. It
// has no Iceberg expression, so every data file is a candidate.
func IDPredicate(f func(id int64) bool) *tableops.Predicate {
	return &tableops.Predicate{
		Columns: []string{"id"},
		Match: func(_ context.Context, rec arrow.RecordBatch) ([]bool, error) {
			ids, ok := rec.Column(0).(*array.Int64)
			if !ok {
				return nil, fmt.Errorf("bench: column id is %s, want int64", rec.Column(0).DataType())
			}
			out := make([]bool, ids.Len())
			for i := range out {
				out[i] = ids.IsValid(i) && f(ids.Value(i))
			}
			return out, nil
		},
	}
}

// Delete deletes the rows of table name whose id satisfies f in one
// snapshot, copy-on-write or merge-on-read as the table's
// write.delete.mode says, and returns the outcome.
func (e *Env) Delete(name string, f func(id int64) bool) (*tableops.Outcome, error) {
	return tableops.Delete(e.Ctx, e.Target(name), IDPredicate(f))
}
