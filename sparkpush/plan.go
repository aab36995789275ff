package sparkpush

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/expr"
	"github.com/floedata/floe/pushdown"
)

// planner turns a job into Spark SQL. Statements name the staging branch
// as {target}.
type planner struct {
	e   *Engine
	job pushdown.Job
	out *table.Table
	src *table.Table
}

const targetMark = "\x00target\x00"

// checkMark starts a check statement: a query whose rows, if any, fail the
// build with a message naming them (checkMark + message + "\x00" + query).
const checkMark = "\x00check\x00"

func checkStmt(msg, query string) string { return checkMark + msg + "\x00" + query }

// parseCheck splits a check statement; ok is false for other statements.
func parseCheck(s string) (msg, query string, ok bool) {
	if !strings.HasPrefix(s, checkMark) {
		return "", "", false
	}
	msg, query, _ = strings.Cut(s[len(checkMark):], "\x00")
	return msg, query, true
}

// dupCheck fails the build when the cached view holds several rows of one
// key.
func (p *planner) dupCheck(view, msg string) string {
	var keys []string
	for _, k := range p.job.Keys {
		keys = append(keys, quote(k))
	}
	return checkStmt(msg, "SELECT "+strings.Join(keys, ", ")+", count(*) AS n FROM "+view+" GROUP BY "+strings.Join(keys, ", ")+" HAVING count(*) > 1 LIMIT 3")
}

func quote(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

func (p *planner) name(ident []string) string {
	parts := []string{quote(p.e.catName)}
	for _, s := range ident {
		parts = append(parts, quote(s))
	}
	return strings.Join(parts, ".")
}

func (p *planner) outName() string { return p.name(p.job.Output) }

func (p *planner) statements(stmts []string, stage string) []string {
	target := p.outName() + "." + quote("branch_"+stage)
	out := make([]string, len(stmts))
	for i, s := range stmts {
		out[i] = strings.ReplaceAll(s, targetMark, target)
	}
	return out
}

// srcAt is the source table read at snapshot id (nil: its current state,
// for an input without snapshots).
func (p *planner) srcAt(id *int64) string {
	n := p.name(p.job.Source.Table)
	if id == nil {
		return n
	}
	return n + " VERSION AS OF " + strconv.FormatInt(*id, 10)
}

// columnsAt are the top-level columns of tbl at snapshot id (its current
// schema when id is nil or unknown).
func columnsAt(tbl *table.Table, id *int64) map[string]iceberg.NestedField {
	sc := tbl.Schema()
	if id != nil {
		if s := tbl.Metadata().SnapshotByID(*id); s != nil && s.SchemaID != nil {
			for _, x := range tbl.Metadata().Schemas() {
				if x.ID == *s.SchemaID {
					sc = x
				}
			}
		}
	}
	m := map[string]iceberg.NestedField{}
	for _, f := range sc.Fields() {
		m[f.Name] = f
	}
	return m
}

// plan checks that the job can run on Spark and returns its statements.
func (p *planner) plan(ctx context.Context) ([]string, error) {
	j := p.job
	if len(j.Source.Table) > 0 {
		src, err := p.e.cat.Load(ctx, j.Source.Table)
		if err != nil {
			return nil, err
		}
		p.src = src
	}
	switch j.Kind {
	case pushdown.JobSync:
		return p.sync()
	case pushdown.JobFilter:
		return p.filter()
	case pushdown.JobMerge:
		return p.merge()
	case pushdown.JobSQL:
		return p.sqlMerge()
	case pushdown.JobApply:
		return p.apply()
	case pushdown.JobDelta:
		return p.delta()
	}
	return nil, fmt.Errorf("%w: unknown job kind %q", pushdown.ErrNotPushable, j.Kind)
}

// outColumns are the output's columns, in order.
func (p *planner) outColumns() []iceberg.NestedField { return p.out.Schema().Fields() }

// projection selects the output's columns from a relation with the
// source's columns at id (a column the snapshot lacks reads NULL).
func (p *planner) projection(alias string, id *int64) (string, error) {
	have := columnsAt(p.src, id)
	cur := columnsAt(p.src, nil)
	var parts []string
	for _, f := range p.outColumns() {
		if _, ok := cur[f.Name]; !ok {
			return "", fmt.Errorf("%w: output column %s is not a column of the source %s", pushdown.ErrNotPushable, f.Name, p.src.Identifier())
		}
		if _, ok := have[f.Name]; !ok {
			parts = append(parts, "CAST(NULL AS "+sparkType(f.Type)+") AS "+quote(f.Name))
			continue
		}
		ref := quote(f.Name)
		if alias != "" {
			ref = alias + "." + ref
		}
		parts = append(parts, ref)
	}
	return strings.Join(parts, ", "), nil
}

// filterSQL renders the job's filter as Spark SQL (floe's predicate
// language is Spark SQL's), on the source's columns.
func (p *planner) filterSQL() (string, error) {
	if p.job.Filter == "" {
		return "true", nil
	}
	e, err := expr.Parse(p.job.Filter)
	if err != nil {
		return "", fmt.Errorf("filter: %s", expr.FormatError(p.job.Filter, err))
	}
	return "(" + e.String() + ")", nil
}

// allAt selects every current source column from the source at id,
// NULL for the columns the snapshot lacks, so that both sides of a
// comparison have the current schema.
func (p *planner) allAt(id *int64) string {
	have := columnsAt(p.src, id)
	var parts []string
	for _, f := range p.src.Schema().Fields() {
		if _, ok := have[f.Name]; ok {
			parts = append(parts, quote(f.Name))
		} else {
			parts = append(parts, "CAST(NULL AS "+sparkType(f.Type)+") AS "+quote(f.Name))
		}
	}
	return "SELECT " + strings.Join(parts, ", ") + " FROM " + p.srcAt(id)
}

func (p *planner) replaceStatements() ([]string, error) {
	proj, err := p.projection("", p.job.Source.End)
	if err != nil {
		return nil, err
	}
	f, err := p.filterSQL()
	if err != nil {
		return nil, err
	}
	if p.job.Source.End == nil {
		return []string{"DELETE FROM " + targetMark}, nil
	}
	from := "(" + p.allAt(p.job.Source.End) + ")"
	return []string{"INSERT OVERWRITE " + targetMark + " SELECT " + proj + " FROM " + from + " WHERE COALESCE(" + f + ", false)"}, nil
}

// comparable rejects columns Spark cannot compare (maps).
func comparable(fields []iceberg.NestedField) string {
	for _, f := range fields {
		if hasMap(f.Type) {
			return fmt.Sprintf("column %s has a map type, which Spark cannot compare to find changed rows", f.Name)
		}
	}
	return ""
}

func hasMap(t iceberg.Type) bool {
	switch t := t.(type) {
	case *iceberg.MapType:
		return true
	case *iceberg.ListType:
		return hasMap(t.Element)
	case *iceberg.StructType:
		for _, f := range t.FieldList {
			if hasMap(f.Type) {
				return true
			}
		}
	}
	return false
}

// netChanges is the per-key net change between the source's snapshots
// Start and End: a FULL OUTER JOIN of the two snapshots on the key (it
// works on every layout, delete files included, where Spark's
// create_changelog_view refuses). Its rows carry the output's columns
// (from End), __op ('U' upsert, 'D' delete) and __ct (INSERT,
// UPDATE_AFTER, DELETE). Rows of End that do not match the filter are
// deletes. A key held by several rows of either snapshot fails the
// statement (assert_true), as the local engine refuses duplicate keys.
func (p *planner) netChanges(withFilter bool) (string, error) {
	j := p.job
	if msg := comparable(p.src.Schema().Fields()); msg != "" {
		return "", fmt.Errorf("%w: %s", pushdown.ErrNotPushable, msg)
	}
	f := "true"
	if withFilter {
		var err error
		if f, err = p.filterSQL(); err != nil {
			return "", err
		}
	}
	side := func(id *int64) string {
		return "SELECT *, COALESCE(" + f + ", false) AS __m FROM (" + p.allAt(id) + ")"
	}
	var on, same, keysOut []string
	for _, k := range j.Keys {
		on = append(on, "a."+quote(k)+" = b."+quote(k))
		keysOut = append(keysOut, "COALESCE(b."+quote(k)+", a."+quote(k)+") AS "+quote(k))
	}
	isKey := map[string]bool{}
	for _, k := range j.Keys {
		isKey[k] = true
	}
	var vals []string
	for _, fld := range p.outColumns() {
		same = append(same, "a."+quote(fld.Name)+" <=> b."+quote(fld.Name))
		if !isKey[fld.Name] {
			vals = append(vals, "b."+quote(fld.Name)+" AS "+quote(fld.Name))
		}
	}
	for _, k := range j.Keys {
		if _, ok := columnsAt(p.out, nil)[k]; !ok {
			return "", fmt.Errorf("%w: key column %s is not an output column", pushdown.ErrNotPushable, k)
		}
	}
	start := j.Source.Start
	var a string
	if start == nil {
		a = "SELECT * FROM (" + side(j.Source.End) + ") WHERE false"
	} else {
		a = side(start)
	}
	b := side(j.Source.End)
	if j.Source.End == nil {
		b = "SELECT * FROM (" + side(nil) + ") WHERE false"
	}
	sel := strings.Join(append(keysOut, vals...), ", ")
	q := "SELECT " + sel + ", CASE WHEN COALESCE(b.__m, false) THEN 'U' ELSE 'D' END AS __op, " +
		"CASE WHEN NOT COALESCE(b.__m, false) THEN 'DELETE' WHEN COALESCE(a.__m, false) THEN 'UPDATE_AFTER' ELSE 'INSERT' END AS __ct " +
		"FROM (" + a + ") a FULL OUTER JOIN (" + b + ") b ON " + strings.Join(on, " AND ") +
		" WHERE NOT (COALESCE(a.__m, false) AND COALESCE(b.__m, false) AND " + strings.Join(same, " AND ") + ")" +
		" AND (COALESCE(a.__m, false) OR COALESCE(b.__m, false))"
	return q, nil
}

// upsertMerge is the MERGE applying rows with __op by key.
func (p *planner) upsertMerge(src string) string {
	var on, set, cols, vals []string
	for _, k := range p.job.Keys {
		on = append(on, "t."+quote(k)+" = s."+quote(k))
	}
	for _, f := range p.outColumns() {
		set = append(set, quote(f.Name)+" = s."+quote(f.Name))
		cols = append(cols, quote(f.Name))
		vals = append(vals, "s."+quote(f.Name))
	}
	return "MERGE INTO " + targetMark + " t USING (" + src + ") s ON " + strings.Join(on, " AND ") +
		" WHEN MATCHED AND s.__op = 'D' THEN DELETE" +
		" WHEN MATCHED THEN UPDATE SET " + strings.Join(set, ", ") +
		" WHEN NOT MATCHED AND s.__op = 'U' THEN INSERT (" + strings.Join(cols, ", ") + ") VALUES (" + strings.Join(vals, ", ") + ")"
}

func (p *planner) sync() ([]string, error) {
	if len(p.job.Keys) == 0 {
		return nil, fmt.Errorf("%w: sync needs key columns", pushdown.ErrNotPushable)
	}
	if p.job.Replace || p.job.Source.Start == nil {
		return p.replaceStatements()
	}
	q, err := p.netChanges(true)
	if err != nil {
		return nil, err
	}
	return []string{"CACHE TABLE __floe_changes AS " + q,
		p.dupCheck("__floe_changes", "several live rows of the source "+catalogName(p.job.Source.Table)+" share a key; per-key changes need unique keys"),
		p.upsertMerge("SELECT * FROM __floe_changes")}, nil
}

func catalogName(ident []string) string { return strings.Join(ident, ".") }

func (p *planner) filter() ([]string, error) {
	if p.job.Replace || p.job.Source.Start == nil {
		return p.replaceStatements()
	}
	if msg := comparable(p.src.Schema().Fields()); msg != "" {
		return nil, fmt.Errorf("%w: %s", pushdown.ErrNotPushable, msg)
	}
	proj, err := p.projection("", p.job.Source.End)
	if err != nil {
		return nil, err
	}
	f, err := p.filterSQL()
	if err != nil {
		return nil, err
	}
	// Append-only: the rows added are End minus Start, as multisets.
	added := "(" + p.allAt(p.job.Source.End) + " EXCEPT ALL " + p.allAt(p.job.Source.Start) + ")"
	return []string{"INSERT INTO " + targetMark + " SELECT " + proj + " FROM " + added + " WHERE COALESCE(" + f + ", false)"}, nil
}

// changesView creates the temporary view "changes" of a merge transform:
// the source's columns plus _change_type, _change_ordinal and
// _commit_snapshot_id, one row per key (net changes; on a full build the
// current rows as INSERTs).
func (p *planner) changesView() (string, error) {
	j := p.job
	end := "NULL"
	if j.Source.End != nil {
		end = strconv.FormatInt(*j.Source.End, 10)
	}
	var cols []string
	for _, f := range p.src.Schema().Fields() {
		cols = append(cols, quote(f.Name))
	}
	if j.Replace || j.Source.Start == nil {
		from := "(" + p.allAt(j.Source.End) + ")"
		if j.Source.End == nil {
			from = "(" + p.allAt(nil) + " WHERE false)"
		}
		return "CREATE OR REPLACE TEMPORARY VIEW changes AS SELECT " + strings.Join(cols, ", ") +
			", 'INSERT' AS _change_type, 0 AS _change_ordinal, CAST(" + end + " AS BIGINT) AS _commit_snapshot_id FROM " + from, nil
	}
	saved := p.out
	// netChanges projects the output's columns; a merge's changes carry
	// the source's.
	p.out = p.src
	q, err := p.netChanges(false)
	p.out = saved
	if err != nil {
		return "", err
	}
	return "CACHE TABLE changes AS SELECT " + strings.Join(cols, ", ") +
		", __ct AS _change_type, 0 AS _change_ordinal, CAST(" + end + " AS BIGINT) AS _commit_snapshot_id FROM (" + q + ")", nil
}

// retarget renders a MERGE statement with its target on the staging branch
// (its alias kept, or the table's name as alias) and its source mapped by
// src.
func (p *planner) retarget(stmt string, src func(m *expr.Merge) ([]string, error)) ([]string, error) {
	m, err := expr.ParseMerge(stmt)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", pushdown.ErrNotPushable, expr.FormatError(stmt, err))
	}
	if m.TargetAlias == "" {
		m.TargetAlias = m.Target[len(m.Target)-1]
	}
	pre, err := src(m)
	if err != nil {
		return nil, err
	}
	m.Target = []string{"\x01"}
	s := strings.Replace(m.String(), quote("\x01"), targetMark, 1)
	return append(pre, s), nil
}

func (p *planner) merge() ([]string, error) {
	view, err := p.changesView()
	if err != nil {
		return nil, err
	}
	stmts, err := p.retarget(p.job.Statement, func(m *expr.Merge) ([]string, error) {
		if m.SourceAlias == "" && m.Source.Table != nil {
			m.SourceAlias = m.Source.Table[len(m.Source.Table)-1]
		}
		m.Source.Table = []string{"changes"}
		pre := []string{view}
		if !p.job.Replace && p.job.Source.Start != nil {
			pre = append(pre, p.dupCheck("changes", "several live rows of the source "+catalogName(p.job.Source.Table)+" share a key; per-key changes need unique keys"))
		}
		return pre, nil
	})
	if err != nil {
		return nil, err
	}
	if p.job.Replace {
		stmts = append(stmts[:len(stmts)-1:len(stmts)-1], "DELETE FROM "+targetMark, stmts[len(stmts)-1])
	}
	return stmts, nil
}

// fileView creates a temporary view over a file Spark reads by path (the
// file must be where Spark's executors can read it: a shared file system
// or an object store).
func fileView(view, path string) (string, error) {
	lower := strings.ToLower(path)
	lit := "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(path) + "'"
	switch {
	case strings.HasSuffix(lower, ".parquet"):
		return "CREATE OR REPLACE TEMPORARY VIEW " + view + " USING parquet OPTIONS (path " + lit + ")", nil
	case strings.HasSuffix(lower, ".jsonl"), strings.HasSuffix(lower, ".json"), strings.HasSuffix(lower, ".ndjson"):
		return "CREATE OR REPLACE TEMPORARY VIEW " + view + " USING json OPTIONS (path " + lit + ")", nil
	case strings.HasSuffix(lower, ".csv"):
		return "CREATE OR REPLACE TEMPORARY VIEW " + view + " USING csv OPTIONS (path " + lit + ", header 'true', inferSchema 'true')", nil
	}
	return "", fmt.Errorf("%w: %s: Spark reads .parquet, .jsonl/.json and .csv files", pushdown.ErrNotPushable, path)
}

func (p *planner) sqlMerge() ([]string, error) {
	return p.retarget(p.job.Statement, func(m *expr.Merge) ([]string, error) {
		if m.Source.Table != nil {
			if m.SourceAlias == "" {
				m.SourceAlias = m.Source.Table[len(m.Source.Table)-1]
			}
			m.Source.Table = append([]string{p.e.catName}, m.Source.Table...)
			return nil, nil
		}
		v, err := fileView("__floe_source", m.Source.Path)
		if err != nil {
			return nil, err
		}
		m.Source.Path = ""
		m.Source.Table = []string{"__floe_source"}
		return []string{v}, nil
	})
}

// changeRank orders the change types of one key at one sequence value, as
// the local engine does: UPDATE_BEFORE < DELETE < UPDATE_AFTER < INSERT.
func changeRank(col string) string {
	return "CASE upper(" + col + ") WHEN 'UPDATE_BEFORE' THEN 0 WHEN 'UPDATE_PREIMAGE' THEN 0 WHEN 'DELETE' THEN 1 WHEN 'UPDATE_AFTER' THEN 2 WHEN 'UPDATE_POSTIMAGE' THEN 2 ELSE 3 END"
}

// keyedApply is the MERGE of change rows from rel (with change type column
// ct, upper-cased: INSERT, UPDATE_AFTER, DELETE; UPDATE_BEFORE dropped),
// collapsed per key by seq when given (else at most one row per key).
func (p *planner) keyedApply(rel, ct, seq string) []string {
	var part []string
	for _, k := range p.job.Keys {
		part = append(part, quote(k))
	}
	var vals []string
	for _, f := range p.outColumns() {
		vals = append(vals, "CAST("+quote(f.Name)+" AS "+sparkType(f.Type)+") AS "+quote(f.Name))
	}
	base := "SELECT *, " + changeRank(quote(ct)) + " AS __rank FROM " + rel + " WHERE upper(" + quote(ct) + ") NOT IN ('UPDATE_BEFORE', 'UPDATE_PREIMAGE')"
	var ranked string
	if seq != "" {
		ranked = "SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY " + strings.Join(part, ", ") + " ORDER BY " + quote(seq) + " DESC, __rank DESC) AS __rn FROM (" + base + ")) WHERE __rn = 1"
	} else {
		ranked = base
	}
	src := "SELECT " + strings.Join(vals, ", ") + ", CASE WHEN upper(" + quote(ct) + ") = 'DELETE' THEN 'D' ELSE 'U' END AS __op FROM (" + ranked + ")"
	out := []string{"CACHE TABLE __floe_keyed AS " + src}
	if seq == "" {
		out = append(out, p.dupCheck("__floe_keyed", "several changes for one key (MERGE_CARDINALITY_VIOLATION); give a sequence column to collapse them"))
	}
	return append(out, p.upsertMerge("SELECT * FROM __floe_keyed"))
}

func (p *planner) apply() ([]string, error) {
	if len(p.job.Keys) == 0 {
		return nil, fmt.Errorf("%w: apply needs key columns", pushdown.ErrNotPushable)
	}
	v, err := fileView("__floe_changes", p.job.ChangesPath)
	if err != nil {
		return nil, err
	}
	ct := p.job.ChangeTypeColumn
	if ct == "" {
		ct = "_change_type"
	}
	return append([]string{v}, p.keyedApply("__floe_changes", ct, p.job.SequenceColumn)...), nil
}

func (p *planner) delta() ([]string, error) {
	if len(p.job.Keys) == 0 {
		return nil, fmt.Errorf("%w: delta sync needs equality columns", pushdown.ErrNotPushable)
	}
	lit := "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(p.job.DeltaPath) + "'"
	view := fmt.Sprintf("CREATE OR REPLACE TEMPORARY VIEW __floe_delta_changes AS SELECT * FROM table_changes_by_path(%s, %d, %d)", lit, p.job.DeltaStart, p.job.DeltaEnd)
	return append([]string{view}, p.keyedApply("__floe_delta_changes", "_change_type", "_commit_version")...), nil
}

// sparkType is the Spark SQL type of an Iceberg type.
func sparkType(t iceberg.Type) string {
	switch t := t.(type) {
	case iceberg.BooleanType:
		return "BOOLEAN"
	case iceberg.Int32Type:
		return "INT"
	case iceberg.Int64Type:
		return "BIGINT"
	case iceberg.Float32Type:
		return "FLOAT"
	case iceberg.Float64Type:
		return "DOUBLE"
	case iceberg.DecimalType:
		return fmt.Sprintf("DECIMAL(%d,%d)", t.Precision(), t.Scale())
	case iceberg.DateType:
		return "DATE"
	case iceberg.TimestampTzType:
		return "TIMESTAMP"
	case iceberg.TimestampType:
		return "TIMESTAMP_NTZ"
	case iceberg.StringType, iceberg.UUIDType:
		return "STRING"
	case iceberg.BinaryType, iceberg.FixedType:
		return "BINARY"
	case *iceberg.ListType:
		return "ARRAY<" + sparkType(t.Element) + ">"
	case *iceberg.MapType:
		return "MAP<" + sparkType(t.KeyType) + ", " + sparkType(t.ValueType) + ">"
	case *iceberg.StructType:
		var parts []string
		for _, f := range t.FieldList {
			parts = append(parts, quote(f.Name)+": "+sparkType(f.Type))
		}
		return "STRUCT<" + strings.Join(parts, ", ") + ">"
	}
	return "STRING"
}
