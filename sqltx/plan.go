package sqltx

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/floedata/floe/internal/transform"
)

// Rules a SQL transform is maintained by (the floe.sql.rule summary value).
const (
	// RuleRowLocal: a row-local query over one table, maintained by key
	// from the table's net changes: the query runs over the deleted and
	// the inserted row images; keys only the deleted images produce are
	// deleted, the inserted images' results are upserted.
	RuleRowLocal = "row-local"
	// RuleRowLocalAppend: a row-local query without key, appended from
	// the query over the appended rows.
	RuleRowLocalAppend = "row-local-append"
	// RuleFull: every build recomputes the whole query.
	RuleFull = "full"
)

// Snapshot summary keys of the commits of a SQL transform.
const (
	SummaryRule          = "floe.sql.rule"
	SummaryRebuildReason = "floe.sql.rebuild-reason"
)

// ErrInvalidQuery is wrapped by errors about the query itself.
var ErrInvalidQuery = errors.New("invalid SQL query")

// QueryError is a query the engine refused, with the position (a byte
// offset into the query, -1 when unknown).
type QueryError struct {
	Query    string
	Message  string
	Position int
}

func (e *QueryError) Error() string {
	if e.Position < 0 || e.Position > len(e.Query) {
		return fmt.Sprintf("%s: %s", ErrInvalidQuery, e.Message)
	}
	line, col := 1, 1
	for _, r := range e.Query[:e.Position] {
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return fmt.Sprintf("%s: %s (line %d, column %d)", ErrInvalidQuery, e.Message, line, col)
}

func (e *QueryError) Unwrap() error { return ErrInvalidQuery }

// Plan is what floe knows of a query before running it: the tables it
// reads and whether it is row-local.
type Plan struct {
	Query string
	// Tables are the tables the query reads, in order of first
	// appearance: Iceberg tables as "ns.table", Delta tables (delta."PATH"
	// in the query) as "delta:PATH".
	Tables []string
	// RowLocal is true when the query is a projection (expressions,
	// deterministic scalar functions, CASE, casts) with an optional WHERE
	// over one table; NotRowLocal says why not.
	RowLocal    bool
	NotRowLocal string
	// GroupBy is set when the query is a GROUP BY the group-by rule (one
	// table) or the group-by-join rule (a join) maintains (see RuleFor);
	// NotGroupBy says why a GROUP BY query is not.
	GroupBy    *GroupBy
	NotGroupBy string
	join       *joinPlan // set when the query qualifies for RuleJoin
}

// Rule returns the rule a transform of this query follows (keyed: it has
// a key) and, for RuleFull, why.
func (p *Plan) Rule(keyed bool) (rule, reason string) {
	switch {
	case p.join != nil && keyed:
		return RuleJoin, ""
	case p.join != nil:
		return RuleFull, "the query joins tables and has no key (joins are maintained incrementally by key)"
	case !p.RowLocal:
		return RuleFull, p.NotRowLocal
	case keyed:
		return RuleRowLocal, ""
	default:
		return RuleRowLocalAppend, ""
	}
}

// Analyze parses query with the session's engine (DuckDB's own parser,
// json_serialize_sql) and classifies it. When floe cannot be sure the
// query is row-local it says it is not: a full rebuild is always correct.
func Analyze(ctx context.Context, s Session, query string) (*Plan, error) {
	res, err := s.Strings(ctx, "SELECT json_serialize_sql(?::VARCHAR)::VARCHAR", query)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidQuery, err)
	}
	if len(res) != 1 || len(res[0]) != 1 {
		return nil, fmt.Errorf("%w: the parser gave no answer", ErrInvalidQuery)
	}
	var doc struct {
		Error      bool             `json:"error"`
		Message    string           `json:"error_message"`
		Position   string           `json:"position"`
		Statements []map[string]any `json:"statements"`
	}
	if err := json.Unmarshal([]byte(res[0][0]), &doc); err != nil {
		return nil, fmt.Errorf("%w: the parser's answer: %w", ErrInvalidQuery, err)
	}
	if doc.Error {
		msg := doc.Message
		if strings.Contains(msg, "Only SELECT statements") {
			msg = "want a SELECT query"
		}
		pos, perr := strconv.Atoi(doc.Position)
		if perr != nil {
			pos = -1
		}
		return nil, &QueryError{Query: query, Message: msg, Position: pos}
	}
	if len(doc.Statements) != 1 {
		return nil, &QueryError{Query: query, Message: fmt.Sprintf("want one SELECT query, got %d statements", len(doc.Statements)), Position: -1}
	}
	node, _ := doc.Statements[0]["node"].(map[string]any)
	p := &Plan{Query: query}
	ctes := map[string]bool{}
	collectCTEs(node, ctes)
	var bad error
	at := map[string]int{}
	walk(node, func(m map[string]any) {
		if m["type"] != "BASE_TABLE" || bad != nil {
			return
		}
		name, _ := m["table_name"].(string)
		schema, _ := m["schema_name"].(string)
		cat, _ := m["catalog_name"].(string)
		loc := position(m)
		switch {
		case schema == "" && cat == "" && ctes[strings.ToLower(name)]:
			return
		case schema == "":
			bad = &QueryError{Query: query, Position: loc, Message: fmt.Sprintf("table %q: name Iceberg tables as namespace.table", name)}
			return
		case cat != "":
			bad = &QueryError{Query: query, Position: loc, Message: fmt.Sprintf("table %s.%s.%s: nested namespaces are not supported in SQL yet; name tables as namespace.table", cat, schema, name)}
			return
		}
		full, err := tableRef(schema, name)
		if err != nil {
			bad = &QueryError{Query: query, Position: loc, Message: err.Error()}
			return
		}
		if old, seen := at[full]; !seen || loc < old {
			at[full] = loc
		}
		if !slices.Contains(p.Tables, full) {
			p.Tables = append(p.Tables, full)
		}
	})
	// The walk visits objects in map order: order tables as the query
	// names them.
	slices.SortStableFunc(p.Tables, func(a, b string) int { return at[a] - at[b] })
	if bad != nil {
		return nil, bad
	}
	if len(p.Tables) == 0 {
		return nil, &QueryError{Query: query, Position: -1, Message: "the query reads no Iceberg table (name them as namespace.table) and no Delta table (delta.\"path\")"}
	}
	reason, funcs := shape(node)
	if reason == "" {
		reason, err = checkFunctions(ctx, s, funcs)
		if err != nil {
			return nil, err
		}
	}
	if ft, _ := node["from_table"].(map[string]any); reason != "" && ft["type"] == "JOIN" {
		if reason, err = p.analyzeJoin(ctx, s, doc.Statements[0]); err != nil {
			return nil, err
		}
	}
	p.RowLocal, p.NotRowLocal = reason == "" && p.join == nil, reason
	if !p.RowLocal && p.join == nil {
		if p.GroupBy, p.NotGroupBy, err = analyzeGroupBy(ctx, s, res[0][0]); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// DeltaSchema is the schema name under which a query names Delta tables:
// delta."/data/orders" or delta."s3://bucket/orders" is the Delta table at
// that location (so no Iceberg namespace named delta can be read in SQL).
const DeltaSchema = "delta"

// tableRef is the name of the table schema.name of a query in
// Plan.Tables: "ns.table", or "delta:PATH" for a Delta table.
func tableRef(schema, name string) (string, error) {
	if !strings.EqualFold(schema, DeltaSchema) {
		return schema + "." + name, nil
	}
	if strings.TrimSpace(name) == "" {
		return "", fmt.Errorf("delta.%q: a Delta table needs a location: delta.\"/path/to/table\" or delta.\"s3://bucket/table\"", name)
	}
	if strings.ContainsAny(name, ",|") {
		return "", fmt.Errorf("the Delta table %q: a location with ',' or '|' is not supported", name)
	}
	return transform.DeltaTablePrefix + name, nil
}

// DeltaLocation returns the location of a Delta table of Plan.Tables
// ("delta:PATH"), and whether t is one.
func DeltaLocation(t string) (string, bool) {
	return strings.CutPrefix(t, transform.DeltaTablePrefix)
}

// walk calls fn for every object in v, depth first.
func walk(v any, fn func(map[string]any)) {
	switch t := v.(type) {
	case map[string]any:
		fn(t)
		for _, c := range t {
			walk(c, fn)
		}
	case []any:
		for _, c := range t {
			walk(c, fn)
		}
	}
}

func collectCTEs(v any, out map[string]bool) {
	walk(v, func(m map[string]any) {
		cm, ok := m["cte_map"].(map[string]any)
		if !ok {
			return
		}
		entries, _ := cm["map"].([]any)
		for _, e := range entries {
			if em, ok := e.(map[string]any); ok {
				if k, ok := em["key"].(string); ok {
					out[strings.ToLower(k)] = true
				}
			}
		}
	})
}

func position(m map[string]any) int {
	if f, ok := m["query_location"].(float64); ok && f >= 0 && f < 1<<40 {
		return int(f)
	}
	return -1
}

// rowLocalClasses are the expression classes that compute from one row.
var rowLocalClasses = map[string]bool{
	"COLUMN_REF": true, "CONSTANT": true, "CASE": true, "CAST": true, "COMPARISON": true,
	"CONJUNCTION": true, "OPERATOR": true, "BETWEEN": true, "STAR": true, "LAMBDA": true,
	"LAMBDA_REF": true, "COLLATE": true, "FUNCTION": true, "POSITIONAL_REFERENCE": true,
}

// shape checks the query's structure and returns why it is not row-local
// ("" when it may be) and the functions it calls (to check next).
func shape(node map[string]any) (string, []fnCall) {
	if node == nil {
		return "the query could not be read", nil
	}
	switch t, _ := node["type"].(string); t {
	case "SELECT_NODE":
	case "SET_OPERATION_NODE":
		return "the query is a set operation (UNION, EXCEPT or INTERSECT)", nil
	default:
		return fmt.Sprintf("the query is a %s", strings.ToLower(strings.TrimSuffix(t, "_NODE"))), nil
	}
	if cm, ok := node["cte_map"].(map[string]any); ok {
		if l, _ := cm["map"].([]any); len(l) > 0 {
			return "the query has a WITH clause", nil
		}
	}
	mods, _ := node["modifiers"].([]any)
	for _, m := range mods {
		mm, _ := m.(map[string]any)
		switch mm["type"] {
		case "ORDER_MODIFIER":
			return "the query has ORDER BY", nil
		case "LIMIT_MODIFIER", "LIMIT_PERCENT_MODIFIER":
			return "the query has LIMIT or OFFSET", nil
		case "DISTINCT_MODIFIER":
			return "the query has DISTINCT", nil
		default:
			return fmt.Sprintf("the query has a %v clause", mm["type"]), nil
		}
	}
	from, _ := node["from_table"].(map[string]any)
	switch ft, _ := from["type"].(string); ft {
	case "BASE_TABLE":
		if from["sample"] != nil {
			return "the query samples its table (TABLESAMPLE)", nil
		}
		if from["at_clause"] != nil {
			return "the query reads its table AT a version", nil
		}
	case "JOIN":
		return "the query has a join that no rule maintains here (the join rule takes inner and left joins, the group-by-join rule a GROUP BY over them)", nil
	case "SUBQUERY":
		return "the query reads from a subquery", nil
	default:
		return fmt.Sprintf("the query reads from a %s", strings.ToLower(strings.ReplaceAll(ft, "_", " "))), nil
	}
	if g, _ := node["group_expressions"].([]any); len(g) > 0 {
		return "the query has GROUP BY (not row-local)", nil
	}
	if g, _ := node["group_sets"].([]any); len(g) > 0 {
		return "the query has GROUP BY (not row-local)", nil
	}
	if ah, _ := node["aggregate_handling"].(string); ah != "" && ah != "STANDARD_HANDLING" {
		return "the query has GROUP BY ALL (name the group expressions for it to be maintained by group)", nil
	}
	for _, k := range []string{"having", "qualify", "sample"} {
		if node[k] != nil {
			return fmt.Sprintf("the query has %s", strings.ToUpper(k)), nil
		}
	}
	var reason string
	var funcs []fnCall
	check := func(v any) {
		walk(v, func(m map[string]any) {
			c, ok := m["class"].(string)
			if !ok || reason != "" {
				return
			}
			switch {
			case c == "WINDOW":
				reason = fmt.Sprintf("the query has a window function (%v)", m["function_name"])
			case c == "SUBQUERY":
				reason = "the query has a subquery"
			case !rowLocalClasses[c]:
				reason = fmt.Sprintf("the query has an expression floe does not know to be row-local (%s)", strings.ToLower(c))
			case c == "FUNCTION":
				name, _ := m["function_name"].(string)
				// Built-in functions live in system.main.
				if sch, _ := m["schema"].(string); sch != "" && sch != "main" {
					reason = fmt.Sprintf("the query calls %s.%s, not a built-in function", sch, name)
					return
				}
				if cat, _ := m["catalog"].(string); cat != "" && cat != "system" {
					reason = fmt.Sprintf("the query calls %s.%s, not a built-in function", cat, name)
					return
				}
				if d, _ := m["distinct"].(bool); d {
					reason = fmt.Sprintf("the query has an aggregate (%s(DISTINCT ...))", name)
					return
				}
				if m["filter"] != nil {
					reason = fmt.Sprintf("the query has an aggregate (%s(...) FILTER)", name)
					return
				}
				if ob, _ := m["order_bys"].(map[string]any); ob != nil {
					if l, _ := ob["orders"].([]any); len(l) > 0 {
						reason = fmt.Sprintf("the query has an aggregate (%s(... ORDER BY ...))", name)
						return
					}
				}
				funcs = append(funcs, fnCall{name: strings.ToLower(name), op: m["is_operator"] == true})
			}
		})
	}
	check(node["select_list"])
	check(node["where_clause"])
	return reason, funcs
}

type fnCall struct {
	name string
	op   bool
}

// checkFunctions looks the functions up in the engine's catalog
// (duckdb_functions()): each must be a scalar function whose every
// overload is deterministic.
func checkFunctions(ctx context.Context, s Session, funcs []fnCall) (string, error) {
	if len(funcs) == 0 {
		return "", nil
	}
	var names []string
	for _, f := range funcs {
		if !slices.Contains(names, f.name) {
			names = append(names, f.name)
		}
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = "'" + strings.ReplaceAll(n, "'", "''") + "'"
	}
	rows, err := s.Strings(ctx, "SELECT lower(function_name), function_type, coalesce(stability, '') FROM duckdb_functions() WHERE lower(function_name) IN ("+strings.Join(quoted, ", ")+")")
	if err != nil {
		return "", fmt.Errorf("look up functions: %w", err)
	}
	kinds := map[string][][2]string{}
	for _, r := range rows {
		kinds[r[0]] = append(kinds[r[0]], [2]string{r[1], r[2]})
	}
	for _, n := range names {
		ks := kinds[n]
		if len(ks) == 0 {
			return fmt.Sprintf("the query calls %s, which floe does not know", n), nil
		}
		for _, k := range ks {
			switch {
			case k[0] == "aggregate":
				return fmt.Sprintf("the query has an aggregate (%s) without GROUP BY: it is recomputed in full", n), nil
			case k[0] == "macro":
				return fmt.Sprintf("the query calls the macro %s, which floe does not know to be row-local", n), nil
			case k[0] != "scalar":
				return fmt.Sprintf("the query calls the %s function %s", k[0], n), nil
			case k[1] != "CONSISTENT":
				return fmt.Sprintf("the query calls %s, which is not deterministic", n), nil
			}
		}
	}
	return "", nil
}
