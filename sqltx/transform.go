package sqltx

import (
	"context"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/changelog"
	"github.com/floedata/floe/internal/transform"
)

// Spec describes a SQL transform: keep Dst equal to the result of Query.
type Spec struct {
	Name  string // transform name (default "sql -> <dst>")
	Query string // a SELECT over Iceberg tables named namespace.table
	Dst   string // destination table, created from the result's schema
	// Keys name the result's key columns: with keys the destination is
	// maintained by key (and they must be unique in the result); without,
	// it is append-only (row-local queries) or replaced on every build.
	Keys        []string
	PartitionBy string            // partition spec floe creates Dst with
	Properties  map[string]string // properties floe creates Dst with
	// SemanticVersion, when bumped, rebuilds the destination in full.
	SemanticVersion int
	// OnSchemaChange says what a build does when the query's result schema
	// no longer matches the destination's: SchemaRebuild ("" too),
	// SchemaEvolve or SchemaFail.
	OnSchemaChange string
	// Storage and SourceProperties choose the storage settings the query's
	// Delta tables (delta."PATH") are read with: a storage profile of the
	// catalog's configuration file ("": the catalog's own settings), with
	// single keys (s3.endpoint, s3.region, ...) overridden. A query that
	// reads no Delta table refuses them.
	Storage          string
	SourceProperties map[string]string
}

// New parses the query with the registered engine (ErrNoEngine without
// one) and returns the transform with its plan. Its inputs are the tables
// the query names, each under its own name ("ns.table").
func New(ctx context.Context, spec Spec) (*transform.Transform, *Plan, error) {
	if spec.Dst == "" {
		return nil, nil, fmt.Errorf("sql: a destination is required")
	}
	if strings.TrimSpace(spec.Query) == "" {
		return nil, nil, fmt.Errorf("sql: a query is required")
	}
	if err := checkPolicy(spec.OnSchemaChange); err != nil {
		return nil, nil, err
	}
	sess, err := Open(ctx)
	if err != nil {
		return nil, nil, err
	}
	plan, err := Analyze(ctx, sess, spec.Query)
	sess.Close()
	if err != nil {
		return nil, nil, fmt.Errorf("query: %w", err)
	}
	name := spec.Name
	if name == "" {
		name = "sql -> " + spec.Dst
	}
	for _, t := range plan.Tables {
		if tableKey(t) == tableKey(spec.Dst) {
			return nil, nil, fmt.Errorf("query: it reads its own destination %s", spec.Dst)
		}
	}
	keyed := len(spec.Keys) > 0
	rule, reason := plan.RuleFor(spec.Keys)
	version := int(crc32.ChecksumIEEE([]byte(spec.Query+"|"+strings.Join(spec.Keys, ",")+"|"+strconv.Itoa(spec.SemanticVersion))) & 0x7fffffff)
	opts := []transform.Option{transform.WithSemanticVersion(version)}
	deltas := 0
	for _, t := range plan.Tables {
		if loc, ok := DeltaLocation(t); ok {
			opts = append(opts, transform.WithDeltaInput(t, loc, transform.DeltaStorage(spec.Storage, spec.SourceProperties)))
			deltas++
			continue
		}
		opts = append(opts, transform.WithInput(t, t))
	}
	if deltas == 0 && (spec.Storage != "" || len(spec.SourceProperties) > 0) {
		return nil, nil, fmt.Errorf("storage settings (storage, source_properties) are for the query's Delta tables (delta.\"PATH\"), and it reads none")
	}
	outOpts := []transform.OutputOption{transform.PartitionBy(spec.PartitionBy), transform.TableProperties(spec.Properties)}
	if keyed {
		outOpts = append(outOpts, transform.Identifier(spec.Keys...))
	}
	opts = append(opts, transform.WithOutput("destination", spec.Dst, outOpts...))
	if rule != RuleRowLocalAppend {
		// Deletes and overwrites upstream are changes like any other (the
		// full rule then gives its own reason).
		opts = append(opts, transform.WithReadMode(transform.Changelog))
	}
	compute := func(ctx *transform.Context) error {
		// One session per build: the schema check binds empty tables in
		// it (and drops them), the rule then binds the rows it reads.
		sess, err := Open(ctx)
		if err != nil {
			return err
		}
		defer sess.Close()
		if err := schemaChange(ctx, sess, spec, plan); err != nil {
			return err
		}
		ctx.SetSummary(SummaryRule, rule)
		if rule == RuleFull {
			ctx.SetSummary(SummaryRebuildReason, reason)
			ctx.Rebuild("sql: " + reason)
			ctx.Logger().Info("sql transform rebuilt in full", "reason", reason)
		}
		r := &run{ctx: ctx, s: sess, spec: spec, plan: plan}
		if err := r.readDeltaChanges(rule); err != nil {
			return err
		}
		switch {
		case !ctx.IsIncremental():
			return r.full()
		case rule == RuleRowLocal:
			return r.rowLocal()
		case rule == RuleGroupBy:
			return r.groupBy()
		case rule == RuleGroupByJoin:
			return r.groupByJoin()
		case rule == RuleJoin:
			return r.maintainJoin()
		default:
			return r.appendRows()
		}
	}
	return transform.New(name, compute, opts...), plan, nil
}

func tableKey(name string) string {
	if parts, err := catalog.ParseName(name); err == nil {
		return catalog.FormatName(parts)
	}
	return name
}

type run struct {
	ctx  *transform.Context
	s    Session
	spec Spec
	plan *Plan
	cdf  map[string]deltaCDF // the Delta inputs' change data, by table (incremental builds)
}

// bind makes rows readable under the name of table t.
func (r *run) bind(t string, rows *transform.Rows) error {
	ns, name, err := splitName(t)
	if err != nil {
		return err
	}
	return r.s.Bind(r.ctx, ns, name, rows)
}

func splitName(t string) (string, string, error) {
	if loc, ok := DeltaLocation(t); ok {
		return DeltaSchema, loc, nil
	}
	i := strings.LastIndexByte(t, '.')
	if i <= 0 {
		return "", "", fmt.Errorf("table %q: want namespace.table", t)
	}
	return t[:i], t[i+1:], nil
}

// full recomputes the query over every table's current rows and replaces
// the destination.
func (r *run) full() error {
	for _, t := range r.plan.Tables {
		rows, err := r.ctx.Input(t).Current()
		if err != nil {
			return err
		}
		if err := r.bind(t, rows); err != nil {
			return fmt.Errorf("input %s: %w", t, err)
		}
	}
	if err := r.materialize("__floe_result", r.spec.Query); err != nil {
		return err
	}
	if err := r.checkUnique("__floe_result", "the query's result"); err != nil {
		return err
	}
	sch, seq, err := r.s.Query(r.ctx, "SELECT * FROM __floe_result")
	if err != nil {
		return err
	}
	return r.ctx.Output("destination").Replace(transform.NewRows(sch, seq))
}

// appendRows appends the query over the rows appended since the last
// build (an overwrite or delete upstream makes the build full).
func (r *run) appendRows() error {
	t := r.plan.Tables[0]
	if err := r.bindAdded(t); err != nil {
		return err
	}
	sch, seq, err := r.s.Query(r.ctx, r.spec.Query)
	if err != nil {
		return r.queryError(err)
	}
	return r.ctx.Output("destination").Write(transform.NewRows(sch, seq))
}

// rowLocal applies the query to the table's net changes: the result over
// the deleted images names the keys to delete, the result over the
// inserted images the rows to upsert (an upsert wins over a delete of the
// same key). Since the query is row-local, its result over the new state
// is its result over the old state minus the first plus the second.
func (r *run) rowLocal() error {
	t := r.plan.Tables[0]
	data, view, err := r.bindNetChanges(t)
	if err != nil {
		return err
	}
	for _, side := range []struct{ kind, table string }{{changelog.Delete, "__floe_deleted"}, {changelog.Insert, "__floe_inserted"}} {
		if err := r.s.Exec(r.ctx, fmt.Sprintf("CREATE OR REPLACE VIEW %s AS SELECT %s FROM __floe_changes WHERE %s = '%s'",
			view, strings.Join(data, ", "), changelog.ChangeTypeColumn, side.kind)); err != nil {
			return err
		}
		if err := r.materialize(side.table, r.spec.Query); err != nil {
			return err
		}
	}
	if err := r.checkUnique("__floe_inserted", "the query's result over the changed rows"); err != nil {
		return err
	}
	if err := r.checkNewKeys(); err != nil {
		return err
	}
	keys := make([]string, len(r.spec.Keys))
	match := make([]string, len(r.spec.Keys))
	for i, k := range r.spec.Keys {
		keys[i] = quoteIdent(k)
		match[i] = fmt.Sprintf("i.%s IS NOT DISTINCT FROM d.%s", keys[i], keys[i])
	}
	q := fmt.Sprintf(`SELECT *, '%s' AS %s FROM __floe_inserted
UNION ALL BY NAME
SELECT DISTINCT ON (%s) *, '%s' AS %s FROM __floe_deleted d
WHERE NOT EXISTS (SELECT 1 FROM __floe_inserted i WHERE %s)`,
		changelog.Insert, changelog.ChangeTypeColumn, strings.Join(keys, ", "), changelog.Delete, changelog.ChangeTypeColumn,
		strings.Join(match, " AND "))
	sch, seq, err := r.s.Query(r.ctx, q)
	if err != nil {
		return err
	}
	return r.ctx.Output("destination").ApplyChangelog(transform.NewRows(sch, seq), r.spec.Keys...)
}

// bindNetChanges binds table t's net changes as __floe_changes and
// creates its schema, for views named as the query names t: it returns
// the quoted data columns of the changes (without the changelog's own)
// and the view's quoted name.
func (r *run) bindNetChanges(t string) (data []string, view string, err error) {
	if data, err = r.bindChanges(t, "__floe_changes"); err != nil {
		return nil, "", err
	}
	ns, name, err := splitName(t)
	if err != nil {
		return nil, "", err
	}
	if err := r.s.Exec(r.ctx, "CREATE SCHEMA IF NOT EXISTS "+quoteIdent(ns)); err != nil {
		return nil, "", err
	}
	return data, quoteIdent(ns) + "." + quoteIdent(name), nil
}

// bindChanges binds table t's net changes as name (in the default schema)
// and returns their quoted data columns.
func (r *run) bindChanges(t, name string) ([]string, error) {
	if _, ok := r.cdf[t]; ok {
		return r.bindDeltaNetChanges(t, name)
	}
	changes, err := r.ctx.Input(t).NetChanges()
	if err != nil {
		return nil, err
	}
	data := changeDataColumns(changes.Schema())
	if err := r.s.Bind(r.ctx, "", name, changes); err != nil {
		return nil, fmt.Errorf("input %s: %w", t, err)
	}
	return data, nil
}

// changeDataColumns returns the quoted names of the columns of a
// changelog schema that are the table's own (not change type, ordinal or
// commit snapshot).
func changeDataColumns(sch *arrow.Schema) []string {
	var data []string
	for _, f := range sch.Fields() {
		switch f.Name {
		case changelog.ChangeTypeColumn, changelog.ChangeOrdinalColumn, changelog.CommitSnapshotColumn:
			continue
		}
		data = append(data, quoteIdent(f.Name))
	}
	return data
}

// materialize runs query into the temporary table name.
func (r *run) materialize(name, query string) error {
	if err := r.s.Check(r.ctx, query); err != nil {
		return r.queryError(err)
	}
	if err := r.s.Exec(r.ctx, "CREATE OR REPLACE TEMP TABLE "+name+" AS "+query); err != nil {
		return r.queryError(err)
	}
	return nil
}

func (r *run) queryError(err error) error {
	return fmt.Errorf("query: %w", err)
}

// checkUnique fails when two rows of table share a key, or a key is NULL.
func (r *run) checkUnique(table, what string) error {
	if len(r.spec.Keys) == 0 {
		return nil
	}
	cols, err := r.columns(table)
	if err != nil {
		return err
	}
	keys := make([]string, len(r.spec.Keys))
	nulls := make([]string, len(r.spec.Keys))
	for i, k := range r.spec.Keys {
		if !hasColumn(cols, k) {
			return fmt.Errorf("key: the query's result has no column %q (columns: %s)", k, strings.Join(cols, ", "))
		}
		keys[i] = quoteIdent(k)
		nulls[i] = keys[i] + " IS NULL"
	}
	rows, err := r.s.Strings(r.ctx, fmt.Sprintf("SELECT count(*) FROM %s WHERE %s", table, strings.Join(nulls, " OR ")))
	if err != nil {
		return err
	}
	if len(rows) == 1 && rows[0][0] != "0" {
		return fmt.Errorf("%w: %s has a NULL key in %s row(s) (key %s); a key must identify one row, nothing committed", transform.ErrKeyNotUnique, what, rows[0][0], strings.Join(r.spec.Keys, ", "))
	}
	rows, err = r.s.Strings(r.ctx, fmt.Sprintf("SELECT %s, count(*)::VARCHAR FROM %s GROUP BY ALL HAVING count(*) > 1 LIMIT 1",
		concatKey("", r.spec.Keys), table))
	if err != nil {
		return err
	}
	if len(rows) > 0 {
		return fmt.Errorf("%w: %s has %s rows with the key %s (key %s); a key must identify one row, nothing committed",
			transform.ErrKeyNotUnique, what, rows[0][1], rows[0][0], strings.Join(r.spec.Keys, ", "))
	}
	return nil
}

// checkNewKeys fails when an upserted key that no deleted image had is
// already in the destination: another source row has it, so the query's
// result would hold it twice.
func (r *run) checkNewKeys() error {
	out := r.ctx.Output("destination").Table()
	if out == nil {
		return nil
	}
	keys := make([]string, len(r.spec.Keys))
	match := make([]string, len(r.spec.Keys))
	for i, k := range r.spec.Keys {
		keys[i] = quoteIdent(k)
		match[i] = fmt.Sprintf("d.%s IS NOT DISTINCT FROM i.%s", keys[i], keys[i])
	}
	sch, seq, err := r.s.Query(r.ctx, fmt.Sprintf("SELECT %s FROM __floe_inserted i WHERE NOT EXISTS (SELECT 1 FROM __floe_deleted d WHERE %s)",
		strings.Join(keys, ", "), strings.Join(match, " AND ")))
	if err != nil {
		return err
	}
	var recs []arrow.RecordBatch
	defer func() {
		for _, rec := range recs {
			rec.Release()
		}
	}()
	for rec, err := range seq {
		if err != nil {
			return err
		}
		if rec.NumRows() > 0 {
			recs = append(recs, rec)
		} else {
			rec.Release()
		}
	}
	if len(recs) == 0 {
		return nil
	}
	found, err := existingKeys(r.ctx, r.s, out, sch, recs, r.spec.Keys)
	if err != nil {
		return fmt.Errorf("check the key in %s: %w", r.spec.Dst, err)
	}
	if found != "" {
		return fmt.Errorf("%w: the query's result has the key %s (key %s) twice: a changed source row now gives it, and %s already holds it from another row; a key must identify one row, nothing committed",
			transform.ErrKeyNotUnique, found, strings.Join(r.spec.Keys, ", "), r.spec.Dst)
	}
	return nil
}

func (r *run) columns(table string) ([]string, error) {
	// pragma_table_info resolves the one table the name means; listing
	// duckdb_columns() costs 10-60 ms a call.
	rows, err := r.s.Strings(r.ctx, "SELECT name FROM pragma_table_info(?) ORDER BY cid", table)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(rows))
	for i, row := range rows {
		out[i] = row[0]
	}
	return out, nil
}

func hasColumn(cols []string, c string) bool {
	for _, x := range cols {
		if x == c {
			return true
		}
	}
	return false
}

// concatKey renders the key columns names (qualified by prefix) as one
// string "a=1, b=x".
func concatKey(prefix string, names []string) string {
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = fmt.Sprintf("'%s=' || coalesce(%s%s::VARCHAR, 'NULL')", strings.ReplaceAll(k, "'", "''"), prefix, quoteIdent(k))
	}
	return "concat_ws(', ', " + strings.Join(parts, ", ") + ")"
}

// quoteIdent quotes a SQL identifier.
func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
