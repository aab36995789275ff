package sqltx

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/floedata/floe/changelog"
	"github.com/floedata/floe/expr"
	"github.com/floedata/floe/internal/transform"
)

// RuleGroupBy: a GROUP BY query over one table, keyed by its group
// columns, maintained by recomputing the groups the changes touch.
const RuleGroupBy = "group-by"

// RuleGroupByJoin: a GROUP BY query over inner and left joins of tables
// (as the join rule takes them), keyed by its group columns, maintained
// by recomputing the groups the changes touch (see groupByJoin).
const RuleGroupByJoin = "group-by-join"

// maxPushedValues bounds the values of one group column floe passes to
// the scan as col IN (...); beyond it the scan reads the whole table (the
// exact filter still runs in the engine).
const maxPushedValues = 1000

// groupAggregates are the aggregate functions the group-by rule
// recomputes (with DISTINCT or FILTER too): deterministic over a group's
// rows whatever their order.
var groupAggregates = map[string]bool{"count": true, "count_star": true, "sum": true, "avg": true, "min": true, "max": true}

// GroupBy is what floe knows of a GROUP BY query the group-by rule
// maintains.
type GroupBy struct {
	// Columns are the result's columns of the group expressions, in
	// GROUP BY order: the key the destination must have.
	Columns []string
	// SourceColumns, per group expression, the column of the table it
	// is ("" for an expression, and always over a join): their values
	// filter the scan.
	SourceColumns []string
	// joinColumns, per group expression over a join, the (alias,
	// column) it is when it is alias.column (zero otherwise).
	joinColumns [][2]string
	// touched: SELECT DISTINCT <group expressions> AS __floe_g<i> FROM
	// the table WHERE <the query's WHERE>.
	touched string
	// tagged: SELECT *, <group expressions> AS __floe_g<i> FROM the
	// table WHERE <the query's WHERE>.
	tagged string
	// join is set when the query's FROM is a join (RuleGroupByJoin):
	// tags are the group expressions as select items aliased
	// __floe_g<i>, recompute the query restricted by its WHERE to the
	// joined rows whose group values are in __floe_touched.
	join      *joinPlan
	tags      []any
	recompute string
}

// Rule is the rule a transform keyed by the group columns follows.
func (gb *GroupBy) Rule() string {
	if gb.join != nil {
		return RuleGroupByJoin
	}
	return RuleGroupBy
}

// RuleFor returns the rule a transform of this query with the key keys
// follows and, for RuleFull, why.
func (p *Plan) RuleFor(keys []string) (rule, reason string) {
	switch {
	case p.GroupBy == nil && p.NotGroupBy == "":
		return p.joinRuleFor(keys)
	case p.GroupBy == nil:
		return RuleFull, p.NotGroupBy
	case len(keys) == 0:
		return RuleFull, fmt.Sprintf("the query has GROUP BY and no key: set the key to the group columns (%s) to maintain it by group", strings.Join(p.GroupBy.Columns, ", "))
	}
	same := len(keys) == len(p.GroupBy.Columns)
	for _, k := range keys {
		same = same && slices.ContainsFunc(p.GroupBy.Columns, func(c string) bool { return strings.EqualFold(c, k) })
	}
	if !same {
		return RuleFull, fmt.Sprintf("the key (%s) is not the group columns of the result (%s); a GROUP BY query is maintained by group only when keyed by them",
			strings.Join(keys, ", "), strings.Join(p.GroupBy.Columns, ", "))
	}
	return p.GroupBy.Rule(), ""
}

// analyzeGroupBy classifies a query with GROUP BY from its serialized
// parse tree (raw, json_serialize_sql's answer): nil and "" when the query
// has no GROUP BY, nil and the reason when the group-by rule cannot
// maintain it.
func analyzeGroupBy(ctx context.Context, s Session, raw string) (*GroupBy, string, error) {
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber() // keep constants and positions exact for json_deserialize_sql
	var doc struct {
		Statements []map[string]any `json:"statements"`
	}
	if err := dec.Decode(&doc); err != nil || len(doc.Statements) != 1 {
		return nil, "", nil
	}
	node, _ := doc.Statements[0]["node"].(map[string]any)
	if node == nil || node["type"] != "SELECT_NODE" {
		return nil, "", nil
	}
	groups, _ := node["group_expressions"].([]any)
	if len(groups) == 0 {
		return nil, "", nil
	}
	if sets, _ := node["group_sets"].([]any); len(sets) != 1 {
		return nil, "the query has GROUPING SETS, ROLLUP or CUBE", nil
	} else if set, _ := sets[0].([]any); len(set) != len(groups) {
		return nil, "the query has GROUPING SETS, ROLLUP or CUBE", nil
	}
	if ah, _ := node["aggregate_handling"].(string); ah != "" && ah != "STANDARD_HANDLING" {
		return nil, "the query has GROUP BY ALL", nil
	}
	selects, _ := node["select_list"].([]any)
	from, _ := node["from_table"].(map[string]any)
	alias, _ := from["alias"].(string)
	tname, _ := from["table_name"].(string)
	canon := func(m map[string]any) string { return canonical(m, alias, tname) }
	for _, it := range selects {
		if m, _ := it.(map[string]any); m["class"] == "STAR" {
			return nil, "the query has GROUP BY and * in its select list", nil
		}
	}
	// Resolve GROUP BY positions (GROUP BY 2) to the select list.
	resolved := make([]map[string]any, len(groups))
	for i, g := range groups {
		gm, _ := g.(map[string]any)
		if gm["class"] == "CONSTANT" {
			k, ok := positional(gm)
			if !ok || k < 1 || k > len(selects) {
				return nil, fmt.Sprintf("GROUP BY item %d is a constant floe cannot resolve to a result column", i+1), nil
			}
			gm, _ = selects[k-1].(map[string]any)
		}
		if gm["class"] == "COLUMN_REF" {
			names, _ := gm["column_names"].([]any)
			if len(names) == 1 {
				for _, it := range selects {
					m, _ := it.(map[string]any)
					if a, _ := m["alias"].(string); a != "" && strings.EqualFold(a, fmt.Sprint(names[0])) && canon(m) != canon(gm) {
						return nil, fmt.Sprintf("GROUP BY %s names a result column (an alias): write the expression itself for the query to be maintained by group", names[0]), nil
					}
				}
			}
		}
		resolved[i] = gm
	}
	// The rewrites replace the select list: a WHERE that names a result
	// column (DuckDB resolves aliases there) would lose it.
	aliasRef := ""
	walk(node["where_clause"], func(m map[string]any) {
		names, _ := m["column_names"].([]any)
		if m["class"] != "COLUMN_REF" || len(names) != 1 || aliasRef != "" {
			return
		}
		for _, it := range selects {
			sm, _ := it.(map[string]any)
			if a, _ := sm["alias"].(string); a != "" && strings.EqualFold(a, fmt.Sprint(names[0])) && canon(sm) != canon(m) {
				aliasRef = a
			}
		}
	})
	if aliasRef != "" {
		return nil, fmt.Sprintf("the WHERE names %s, a result column (an alias): write the expression itself for the query to be maintained by group", aliasRef), nil
	}
	// The structure and the expressions: what is left once every
	// aggregate call is replaced by its arguments must be row-local.
	var aggReason string
	var stripped []any
	for _, it := range selects {
		stripped = append(stripped, stripAggregates(it, &aggReason))
	}
	stripped = append(stripped, stripAggregates(node["having"], &aggReason))
	if aggReason != "" {
		return nil, aggReason, nil
	}
	for _, g := range resolved {
		stripped = append(stripped, g)
	}
	pseudo := maps(node)
	pseudo["select_list"] = []any{stripped}
	pseudo["group_expressions"], pseudo["group_sets"], pseudo["having"] = []any{}, []any{}, nil
	pseudo["aggregate_handling"] = "STANDARD_HANDLING"
	var jp *joinPlan
	var reason string
	if from["type"] == "JOIN" {
		// The FROM, ON conditions, WHERE and what is left of the select
		// list must be as the join rule takes them.
		var err error
		probe := &Plan{}
		if reason, err = probe.analyzeJoin(ctx, s, map[string]any{"node": pseudo, "named_param_map": []any{}}); err != nil {
			return nil, "", err
		}
		jp = probe.join
	} else {
		var funcs []fnCall
		reason, funcs = shape(pseudo)
		if reason == "" {
			var err error
			if reason, err = checkFunctions(ctx, s, funcs); err != nil {
				return nil, "", err
			}
		}
	}
	if reason != "" {
		if _, rest, ok := strings.Cut(reason, "has an aggregate ("); ok {
			name, _, _ := strings.Cut(rest, ")")
			reason = fmt.Sprintf("the query has an aggregate the group-by rule does not recompute (%s; it recomputes count, sum, avg, min and max)", name)
		}
		return nil, reason, nil
	}
	// The key: each group expression is a named column of the result.
	gb := &GroupBy{}
	for i, g := range resolved {
		at := slices.IndexFunc(selects, func(it any) bool { m, _ := it.(map[string]any); return canon(m) == canon(g) })
		if at < 0 {
			return nil, fmt.Sprintf("GROUP BY item %d is not a column of the result, so the key cannot name the groups; select it", i+1), nil
		}
		m, _ := selects[at].(map[string]any)
		name, _ := m["alias"].(string)
		src, ref := "", [2]string{}
		if g["class"] == "COLUMN_REF" {
			names, _ := g["column_names"].([]any)
			last := fmt.Sprint(names[len(names)-1])
			if name == "" {
				name = last
			}
			switch {
			case jp != nil:
				// Over a join, a column of one of the tables: qualified by
				// its alias.
				if len(names) == 2 {
					ref = [2]string{fmt.Sprint(names[0]), last}
				}
			// A column of the table: unqualified, or qualified by the
			// table's name or alias (not a struct field).
			case len(names) == 1 || (len(names) == 2 && (strings.EqualFold(fmt.Sprint(names[0]), alias) || strings.EqualFold(fmt.Sprint(names[0]), tname))):
				src = last
			}
		}
		if name == "" {
			return nil, fmt.Sprintf("GROUP BY item %d has no name in the result; give it an alias (AS name)", i+1), nil
		}
		if slices.ContainsFunc(gb.Columns, func(c string) bool { return strings.EqualFold(c, name) }) {
			return nil, fmt.Sprintf("the result has two group columns named %s", name), nil
		}
		gb.Columns = append(gb.Columns, name)
		gb.SourceColumns = append(gb.SourceColumns, src)
		gb.joinColumns = append(gb.joinColumns, ref)
	}
	tags := make([]any, len(resolved))
	for i, g := range resolved {
		c := maps(g)
		c["alias"] = fmt.Sprintf("__floe_g%d", i)
		tags[i] = c
	}
	if jp != nil {
		gb.join, gb.tags = jp, tags
		why, err := gb.renderRecompute(ctx, s, node, resolved)
		if err != nil || why != "" {
			return nil, why, err
		}
		return gb, "", nil
	}
	// The two rewrites, rendered back to SQL by the engine's own
	// json_deserialize_sql.
	star, err := starNode(ctx, s)
	if err != nil {
		return nil, "", err
	}
	render := func(list []any) (string, error) {
		n := maps(node)
		n["select_list"] = list
		n["group_expressions"], n["group_sets"], n["having"] = []any{}, []any{}, nil
		n["aggregate_handling"] = "STANDARD_HANDLING"
		d := map[string]any{"error": false, "statements": []any{map[string]any{"node": n, "named_param_map": []any{}}}}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(d); err != nil {
			return "", err
		}
		res, err := s.Strings(ctx, "SELECT json_deserialize_sql(?::JSON)::VARCHAR", buf.String())
		if err != nil {
			return "", fmt.Errorf("%w: render the group query: %w", ErrInvalidQuery, err)
		}
		if len(res) != 1 || len(res[0]) != 1 || res[0][0] == "" {
			return "", fmt.Errorf("%w: render the group query: no answer", ErrInvalidQuery)
		}
		return res[0][0], nil
	}
	q, err := render(tags)
	if err != nil {
		return nil, "", err
	}
	gb.touched = "SELECT DISTINCT * FROM (" + q + ")"
	if gb.tagged, err = render(append([]any{star}, tags...)); err != nil {
		return nil, "", err
	}
	return gb, "", nil
}

// renderRecompute sets gb.recompute: the query (node) with its WHERE
// ANDed with EXISTS (SELECT 1 FROM __floe_touched AS __floe_t WHERE
// __floe_t.__floe_g<i> IS NOT DISTINCT FROM (<group expression i>) ...),
// so that it aggregates the joined rows of the touched groups only. It
// returns why not when the engine cannot render the rewrite (the query
// is then rebuilt in full).
func (gb *GroupBy) renderRecompute(ctx context.Context, s Session, node map[string]any, groups []map[string]any) (string, error) {
	match := make([]string, len(groups))
	for i, g := range groups {
		c := maps(g)
		c["alias"] = ""
		e, err := exprSQL(ctx, s, c)
		if err != nil {
			return fmt.Sprintf("GROUP BY item %d could not be rendered for the group-by-join rule (%v)", i+1, err), nil
		}
		match[i] = fmt.Sprintf("__floe_t.__floe_g%d IS NOT DISTINCT FROM (%s)", i, e)
	}
	cond := "EXISTS (SELECT 1 FROM __floe_touched AS __floe_t WHERE " + strings.Join(match, " AND ") + ")"
	if node["where_clause"] != nil {
		w, err := exprSQL(ctx, s, node["where_clause"])
		if err != nil {
			return fmt.Sprintf("the WHERE could not be rendered for the group-by-join rule (%v)", err), nil
		}
		cond = "(" + w + ") AND " + cond
	}
	res, err := s.Strings(ctx, "SELECT json_serialize_sql(?::VARCHAR)::VARCHAR", "SELECT 1 FROM __floe_x WHERE "+cond)
	if err != nil || len(res) != 1 || len(res[0]) != 1 {
		return "", fmt.Errorf("%w: parse the group-by-join rewrite: %v", ErrInvalidQuery, err)
	}
	dec := json.NewDecoder(strings.NewReader(res[0][0]))
	dec.UseNumber()
	var doc struct {
		Error      bool   `json:"error"`
		Message    string `json:"error_message"`
		Statements []struct {
			Node map[string]any `json:"node"`
		} `json:"statements"`
	}
	if err := dec.Decode(&doc); err != nil || doc.Error || len(doc.Statements) != 1 || doc.Statements[0].Node["where_clause"] == nil {
		return fmt.Sprintf("the group-by-join rewrite of the WHERE could not be parsed (%v%s)", err, doc.Message), nil
	}
	n := maps(node)
	n["where_clause"] = doc.Statements[0].Node["where_clause"]
	q, err := deserialize(ctx, s, map[string]any{"error": false, "statements": []any{map[string]any{"node": n, "named_param_map": []any{}}}})
	if err != nil {
		return fmt.Sprintf("the group-by-join rewrite could not be rendered (%v)", err), nil
	}
	gb.recompute = q
	return "", nil
}

// positional reads GROUP BY k (an integer constant).
func positional(m map[string]any) (int, bool) {
	v, _ := m["value"].(map[string]any)
	if v == nil || v["is_null"] == true {
		return 0, false
	}
	t, _ := v["type"].(map[string]any)
	switch t["id"] {
	case "INTEGER", "BIGINT", "SMALLINT", "TINYINT", "UBIGINT", "UINTEGER", "HUGEINT":
	default:
		return 0, false
	}
	n, ok := v["value"].(json.Number)
	if !ok {
		return 0, false
	}
	k, err := n.Int64()
	if err != nil || k > 1<<20 {
		return 0, false
	}
	return int(k), true
}

// stripAggregates returns v with every call of an aggregate the rule
// recomputes replaced by its arguments (and FILTER), so that what is
// left must be row-local; reason is set for aggregates it refuses.
func stripAggregates(v any, reason *string) any {
	switch t := v.(type) {
	case map[string]any:
		if t["class"] == "FUNCTION" {
			name, _ := t["function_name"].(string)
			sch, _ := t["schema"].(string)
			cat, _ := t["catalog"].(string)
			if groupAggregates[strings.ToLower(name)] && (sch == "" || sch == "main") && (cat == "" || cat == "system") {
				if ob, _ := t["order_bys"].(map[string]any); ob != nil {
					if l, _ := ob["orders"].([]any); len(l) > 0 && *reason == "" {
						*reason = fmt.Sprintf("the query has an aggregate with ORDER BY (%s(... ORDER BY ...))", name)
					}
				}
				args, _ := t["children"].([]any)
				out := []any{}
				for _, a := range args {
					out = append(out, stripAggregates(a, reason))
				}
				if t["filter"] != nil {
					out = append(out, stripAggregates(t["filter"], reason))
				}
				return out
			}
		}
		c := make(map[string]any, len(t))
		for k, x := range t {
			c[k] = stripAggregates(x, reason)
		}
		return c
	case []any:
		c := make([]any, len(t))
		for i, x := range t {
			c[i] = stripAggregates(x, reason)
		}
		return c
	}
	return v
}

// canonical renders an expression without its alias and positions, and
// with column references unqualified when qualified by the table (names
// are the table's name and alias), to compare expressions.
func canonical(m map[string]any, names ...string) string {
	var strip func(v any) any
	strip = func(v any) any {
		switch t := v.(type) {
		case map[string]any:
			c := make(map[string]any, len(t))
			for k, x := range t {
				if k != "alias" && k != "query_location" {
					c[k] = strip(x)
				}
			}
			if cn, _ := t["column_names"].([]any); t["class"] == "COLUMN_REF" && len(cn) == 2 {
				if slices.ContainsFunc(names, func(n string) bool { return n != "" && strings.EqualFold(n, fmt.Sprint(cn[0])) }) {
					c["column_names"] = []any{cn[1]}
				}
			}
			return c
		case []any:
			c := make([]any, len(t))
			for i, x := range t {
				c[i] = strip(x)
			}
			return c
		}
		return v
	}
	b, _ := json.Marshal(strip(m))
	return strings.ToLower(string(b))
}

// maps is a shallow copy of m.
func maps(m map[string]any) map[string]any {
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// starNode is the engine's parse tree of *.
func starNode(ctx context.Context, s Session) (any, error) {
	res, err := s.Strings(ctx, "SELECT json_serialize_sql('SELECT * FROM floe.t')::VARCHAR")
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(strings.NewReader(res[0][0]))
	dec.UseNumber()
	var doc struct {
		Statements []struct {
			Node struct {
				SelectList []any `json:"select_list"`
			} `json:"node"`
		} `json:"statements"`
	}
	if err := dec.Decode(&doc); err != nil || len(doc.Statements) != 1 || len(doc.Statements[0].Node.SelectList) != 1 {
		return nil, fmt.Errorf("%w: the parser's tree of *: %v", ErrInvalidQuery, err)
	}
	return doc.Statements[0].Node.SelectList[0], nil
}

// groupBy recomputes the groups the table's net changes touch: the group
// values of the deleted and the inserted row images. It reads only those
// groups' rows of the current table (the scan filtered by col IN (...) on
// the group columns that are table columns, so that partitions and file
// statistics prune it; then the exact filter in the engine), reruns the
// query over them, upserts the groups it gives and deletes the touched
// groups it no longer gives (now empty, or filtered by HAVING). Since a
// group's aggregates depend on that group's rows only, the result over
// the new state is the old result with the touched groups replaced.
func (r *run) groupBy() error {
	gb := r.plan.GroupBy
	t := r.plan.Tables[0]
	data, view, err := r.bindNetChanges(t)
	if err != nil {
		return err
	}
	in := r.ctx.Input(t)
	for i, kind := range []string{changelog.Delete, changelog.Insert} {
		if err := r.s.Exec(r.ctx, fmt.Sprintf("CREATE OR REPLACE VIEW %s AS SELECT %s FROM __floe_changes WHERE %s = '%s'",
			view, strings.Join(data, ", "), changelog.ChangeTypeColumn, kind)); err != nil {
			return err
		}
		stmt := "CREATE OR REPLACE TEMP TABLE __floe_touched AS " + gb.touched
		if i > 0 {
			stmt = "INSERT INTO __floe_touched " + gb.touched
		}
		if err := r.s.Exec(r.ctx, stmt); err != nil {
			return r.queryError(err)
		}
	}
	if err := r.s.Exec(r.ctx, "CREATE OR REPLACE TEMP TABLE __floe_touched AS SELECT DISTINCT * FROM __floe_touched"); err != nil {
		return err
	}
	filter, err := r.groupFilter(in, gb.SourceColumns)
	if err != nil {
		return err
	}
	if filter != "" {
		in = in.Filter(filter)
	}
	rows, err := in.Current()
	if err != nil {
		return err
	}
	if err := r.bind(t, rows); err != nil {
		return fmt.Errorf("input %s: %w", t, err)
	}
	tags := make([]string, len(gb.Columns))
	match := make([]string, len(gb.Columns))
	for i := range gb.Columns {
		tags[i] = fmt.Sprintf("__floe_g%d", i)
		match[i] = fmt.Sprintf("t.%s IS NOT DISTINCT FROM s.%s", tags[i], tags[i])
	}
	if err := r.s.Exec(r.ctx, fmt.Sprintf("CREATE OR REPLACE TEMP TABLE __floe_group_rows AS SELECT * EXCLUDE (%s) FROM (%s) s WHERE EXISTS (SELECT 1 FROM __floe_touched t WHERE %s)",
		strings.Join(tags, ", "), gb.tagged, strings.Join(match, " AND "))); err != nil {
		return r.queryError(err)
	}
	if err := r.s.Exec(r.ctx, fmt.Sprintf("CREATE OR REPLACE VIEW %s AS SELECT * FROM __floe_group_rows", view)); err != nil {
		return err
	}
	if err := r.materialize("__floe_result", r.spec.Query); err != nil {
		return err
	}
	return r.replaceGroups()
}

// replaceGroups writes the groups of __floe_result (the query over the
// rows of the touched groups __floe_touched) by key and deletes the
// touched groups it does not give.
func (r *run) replaceGroups() error {
	gb := r.plan.GroupBy
	tags := make([]string, len(gb.Columns))
	for i := range gb.Columns {
		tags[i] = fmt.Sprintf("__floe_g%d", i)
	}
	if err := r.checkUnique("__floe_result", "the query's result over the touched groups"); err != nil {
		return err
	}
	cols, err := r.columns("__floe_result")
	if err != nil {
		return err
	}
	keys := make([]string, len(gb.Columns))
	gone := make([]string, len(gb.Columns))
	notNull := make([]string, len(gb.Columns))
	for i, c := range gb.Columns {
		// The result's own spelling of the column.
		if at := slices.IndexFunc(cols, func(x string) bool { return strings.EqualFold(x, c) }); at >= 0 {
			c = cols[at]
		}
		keys[i] = fmt.Sprintf("t.%s AS %s", tags[i], quoteIdent(c))
		gone[i] = fmt.Sprintf("r.%s IS NOT DISTINCT FROM t.%s", quoteIdent(c), tags[i])
		notNull[i] = fmt.Sprintf("t.%s IS NOT NULL", tags[i])
	}
	// A NULL group is refused in the result (checkUnique), so the
	// destination holds none to delete.
	q := fmt.Sprintf(`SELECT *, '%s' AS %s FROM __floe_result
UNION ALL BY NAME
SELECT %s, '%s' AS %s FROM __floe_touched t
WHERE %s AND NOT EXISTS (SELECT 1 FROM __floe_result r WHERE %s)`,
		changelog.Insert, changelog.ChangeTypeColumn, strings.Join(keys, ", "), changelog.Delete, changelog.ChangeTypeColumn,
		strings.Join(notNull, " AND "), strings.Join(gone, " AND "))
	sch, seq, err := r.s.Query(r.ctx, q)
	if err != nil {
		return err
	}
	return r.ctx.Output("destination").ApplyChangelog(transform.NewRows(sch, seq), r.spec.Keys...)
}

// groupFilter is the scan filter of the touched groups: for every group
// expression that is a column of the table (cols[i], "" when it is not;
// of a type floe's expression language writes literals of), col IN (its
// touched values) [OR col IS NULL]. It keeps a superset of the groups'
// rows ("" = read everything).
func (r *run) groupFilter(in *transform.Input, cols []string) (string, error) {
	var parts []string
	for i, col := range cols {
		if col == "" {
			continue
		}
		f, kind, err := filterColumn(in, col, true)
		if err != nil {
			return "", err
		}
		var lit func(string) string
		switch kind {
		case "integer":
			lit = func(s string) string { return s }
		case "string":
			lit = func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
		default:
			continue
		}
		vals, err := r.s.Strings(r.ctx, fmt.Sprintf("SELECT DISTINCT __floe_g%d::VARCHAR, (__floe_g%d IS NULL)::VARCHAR FROM __floe_touched LIMIT %d", i, i, maxPushedValues+1))
		if err != nil {
			return "", err
		}
		if len(vals) > maxPushedValues {
			continue
		}
		ident := expr.QuoteIdent(f)
		var in []string
		null := false
		for _, v := range vals {
			if v[1] == "true" {
				null = true
				continue
			}
			in = append(in, lit(v[0]))
		}
		var alts []string
		if len(in) > 0 {
			alts = append(alts, ident+" IN ("+strings.Join(in, ", ")+")")
		}
		if null {
			alts = append(alts, ident+" IS NULL")
		}
		if len(alts) == 0 {
			alts = []string{"FALSE"}
		}
		parts = append(parts, "("+strings.Join(alts, " OR ")+")")
	}
	return strings.Join(parts, " AND "), nil
}

// groupByJoin maintains a GROUP BY over a join. With O the joined rows
// (after WHERE) over the old state of every table and N over the new
// one, the groups whose aggregates can differ are the group values of
// the rows that differ between O and N: floe computes a superset T of
// them with the join rule's delta queries (see maintainJoin), projecting
// the group expressions instead of the key: the query with one changed
// table read as its deleted (old state) or inserted (new state) images
// and the others at that state, plus, for a LEFT-joined table that
// changed, the rows at that state whose left side matches one of its
// changed rows of the other state (the rows NULL-extended on one side
// and matched on the other). It then reruns the query over the new
// state with its WHERE restricted to the joined rows whose group values
// are in T (NULL-safe), upserts the groups it gives and deletes the
// groups of T it no longer gives (empty now, or filtered by HAVING).
// The tables the delta queries read whole are read whole by the
// recompute too; the others are pruned by the touched groups where a
// group expression is a column of a table that is never NULL-extended
// (see bindGroupJoin), else read whole.
func (r *run) groupByJoin() error {
	gb := r.plan.GroupBy
	names := make([]string, len(gb.Columns))
	for i := range names {
		names[i] = fmt.Sprintf("__floe_g%d", i)
	}
	st, err := r.joinDelta(gb.tags, names, "__floe_touched")
	if err != nil {
		return err
	}
	// The delta queries read some tables through a join predicate or
	// not at all: the recompute reads them again, pruned where it can;
	// the tables bound whole stay so.
	if err := r.bindGroupJoin(st); err != nil {
		return err
	}
	if err := r.materialize("__floe_result", gb.recompute); err != nil {
		return err
	}
	return r.replaceGroups()
}

// bindGroupJoin binds, for the recompute, the tables of the join the
// delta queries did not bind whole (st.whole[i] false): pruned where it
// can, else whole. The rows of the touched groups' joined rows are all
// the recompute needs:
//   - a table that is never NULL-extended (not the right side of a LEFT
//     JOIN) and one of whose columns is a group expression (alias.column)
//     is read through col IN (the touched values): every joined row
//     holds one row of it, with the row's group value, and dropping its
//     other rows drops only joined rows of other groups;
//   - then a table joined to such a pruned table by a plain column
//     equality (a conjunct of the later one's ON condition) is read
//     through col IN (the pruned rows' values), as the join rule reads a
//     dimension for the keys to recompute (see recomputePredicate).
func (r *run) bindGroupJoin(st *joinState) error {
	gb := r.plan.GroupBy
	jp := gb.join
	done := make([]bool, len(jp.tables))
	var pruned []int
	for i, t := range jp.tables {
		if st.whole[i] || t.left {
			continue
		}
		cols := make([]string, len(gb.joinColumns))
		owns := false
		for g, ref := range gb.joinColumns {
			if ref[1] != "" && strings.EqualFold(ref[0], t.alias) && plainIdent(ref[1]) {
				cols[g], owns = ref[1], true
			}
		}
		if !owns {
			continue
		}
		f, err := r.groupFilter(r.ctx.Input(t.name), cols)
		if err != nil {
			return err
		}
		if f == "" {
			continue
		}
		// Bound first: the next tables' filters read its pruned rows.
		if err := r.bindState(i, &f, st.cols[i], st.changed[i]); err != nil {
			return err
		}
		done[i] = true
		pruned = append(pruned, i)
	}
	for i, t := range jp.tables {
		if st.whole[i] || done[i] {
			continue
		}
		var pred *string
		for _, o := range pruned {
			mine, theirs := jp.equality(i, o)
			if mine == "" || !plainIdent(mine) || !plainIdent(theirs) {
				continue
			}
			f, want, err := filterColumn(r.ctx.Input(t.name), mine, false)
			if err != nil {
				return err
			}
			if want == "" {
				continue
			}
			if pred, err = r.inList(expr.QuoteIdent(f), fmt.Sprintf("__floe_new.t%d", o), theirs, want); err != nil {
				return err
			}
			if pred != nil {
				break
			}
		}
		if err := r.bindState(i, pred, st.cols[i], st.changed[i]); err != nil {
			return err
		}
	}
	return nil
}
