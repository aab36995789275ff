package sqltx

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/floedata/floe/changelog"
	"github.com/floedata/floe/expr"
	"github.com/floedata/floe/internal/transform"
)

// RuleJoin: inner and left joins of tables, each read whole or through
// the query's row-local WHERE and projection, maintained by key from the
// changes of every table by the delta rules (see maintainJoin).
const RuleJoin = "join"

// joinPlan is what the join rule needs of a query: its parse tree (to
// derive the queries it runs) and its tables in FROM order.
type joinPlan struct {
	stmt   []byte // the statement as json_serialize_sql gives it
	tables []joinTable
	where  string // the WHERE clause as SQL ("" when none)
	// items are the select list's plain column references by output
	// name: the key must be made of them.
	items map[string][2]string // output name -> (alias, column)
}

type joinTable struct {
	name  string // ns.table
	alias string // as the query refers to it
	left  bool   // the right side of a LEFT JOIN (NULL-extended)
	cond  string // the ON condition of the join it is the right side of
	// eqs are the conjuncts of that ON condition that are a plain
	// equality of two tables' columns (alias.column = alias.column).
	eqs []joinEq
}

// joinEq is a conjunct a.x = b.y of an ON condition: a row of the join
// holds a row of each side only when their columns are equal, so the
// rows of one side that can join changed rows of the other are those
// whose column is among the changed rows' values.
type joinEq [2][2]string // (alias, column) of each side

// plainEqualities returns the conjuncts of an ON condition's parse tree
// that compare two qualified columns for equality.
func plainEqualities(cond any) []joinEq {
	m, _ := cond.(map[string]any)
	switch m["type"] {
	case "CONJUNCTION_AND":
		var out []joinEq
		children, _ := m["children"].([]any)
		for _, c := range children {
			out = append(out, plainEqualities(c)...)
		}
		return out
	case "COMPARE_EQUAL":
		var eq joinEq
		for i, side := range []any{m["left"], m["right"]} {
			ref, _ := side.(map[string]any)
			names, _ := ref["column_names"].([]any)
			if ref["class"] != "COLUMN_REF" || len(names) != 2 {
				return nil
			}
			a, _ := names[0].(string)
			c, _ := names[1].(string)
			eq[i] = [2]string{a, c}
		}
		return []joinEq{eq}
	}
	return nil
}

// analyzeJoin sets p.join when the query qualifies for the join rule, or
// returns why not.
func (p *Plan) analyzeJoin(ctx context.Context, s Session, stmt map[string]any) (string, error) {
	node, _ := stmt["node"].(map[string]any)
	from, _ := node["from_table"].(map[string]any)
	jp := &joinPlan{items: map[string][2]string{}}
	var conds []any
	var flatten func(ft map[string]any) string
	flatten = func(ft map[string]any) string {
		switch t, _ := ft["type"].(string); t {
		case "BASE_TABLE":
			if ft["sample"] != nil || ft["at_clause"] != nil {
				return "a table is sampled or read AT a version"
			}
			if l, _ := ft["column_name_alias"].([]any); len(l) > 0 {
				return "a table has column aliases"
			}
			name, _ := ft["table_name"].(string)
			schema, _ := ft["schema_name"].(string)
			alias, _ := ft["alias"].(string)
			if alias == "" {
				alias = name
			}
			full, err := tableRef(schema, name)
			if err != nil {
				return err.Error()
			}
			for _, o := range jp.tables {
				if o.name == full {
					return fmt.Sprintf("it reads %s twice", full)
				}
			}
			jp.tables = append(jp.tables, joinTable{name: full, alias: alias})
			return ""
		case "JOIN":
			jt, _ := ft["join_type"].(string)
			if jt != "INNER" && jt != "LEFT" {
				return fmt.Sprintf("a %s join; only inner and left joins are maintained", strings.ToLower(jt))
			}
			if rt, _ := ft["ref_type"].(string); rt != "REGULAR" {
				return fmt.Sprintf("a %s join", strings.ToLower(rt))
			}
			if l, _ := ft["using_columns"].([]any); len(l) > 0 || ft["condition"] == nil {
				return "a join without ON (USING or NATURAL)"
			}
			left, _ := ft["left"].(map[string]any)
			right, _ := ft["right"].(map[string]any)
			if right["type"] != "BASE_TABLE" {
				return "a join whose right side is not a table"
			}
			if why := flatten(left); why != "" {
				return why
			}
			if why := flatten(right); why != "" {
				return why
			}
			cond, err := exprSQL(ctx, s, ft["condition"])
			if err != nil {
				return err.Error()
			}
			jp.tables[len(jp.tables)-1].left = jt == "LEFT"
			jp.tables[len(jp.tables)-1].cond = cond
			jp.tables[len(jp.tables)-1].eqs = plainEqualities(ft["condition"])
			conds = append(conds, ft["condition"])
			return ""
		default:
			return fmt.Sprintf("it reads from a %s", strings.ToLower(strings.ReplaceAll(t, "_", " ")))
		}
	}
	if why := flatten(from); why != "" {
		return "the query has a join that is not maintained incrementally (" + why + ")", nil
	}
	// The select list, WHERE and ON conditions must be row-local: check
	// them as a query over one table would be.
	probe := map[string]any{}
	for k, v := range node {
		probe[k] = v
	}
	probe["from_table"] = map[string]any{"type": "BASE_TABLE"}
	reason, funcs := shape(probe)
	for _, c := range conds {
		probe = map[string]any{"type": "SELECT_NODE", "from_table": map[string]any{"type": "BASE_TABLE"}, "where_clause": c}
		r, f := shape(probe)
		if reason == "" {
			reason = r
		}
		funcs = append(funcs, f...)
	}
	if reason == "" {
		var err error
		if reason, err = checkFunctions(ctx, s, funcs); err != nil {
			return "", err
		}
	}
	if reason != "" {
		return "the query has a join and " + strings.TrimPrefix(reason, "the query "), nil
	}
	if node["where_clause"] != nil {
		w, err := exprSQL(ctx, s, node["where_clause"])
		if err != nil {
			return err.Error(), nil
		}
		jp.where = w
	}
	list, _ := node["select_list"].([]any)
	for _, it := range list {
		m, _ := it.(map[string]any)
		if m["class"] != "COLUMN_REF" {
			continue
		}
		names, _ := m["column_names"].([]any)
		if len(names) != 2 {
			continue
		}
		a, _ := names[0].(string)
		c, _ := names[1].(string)
		out, _ := m["alias"].(string)
		if out == "" {
			out = c
		}
		jp.items[out] = [2]string{a, c}
	}
	b, err := json.Marshal(stmt)
	if err != nil {
		return "", err
	}
	jp.stmt = b
	p.join = jp
	return "", nil
}

// exprSQL renders an expression of a parse tree back to SQL.
func exprSQL(ctx context.Context, s Session, e any) (string, error) {
	doc := map[string]any{"error": false, "statements": []any{map[string]any{"named_param_map": []any{}, "node": map[string]any{
		"type": "SELECT_NODE", "modifiers": []any{}, "cte_map": map[string]any{"map": []any{}},
		"select_list": []any{map[string]any{"class": "STAR", "type": "STAR", "alias": "", "query_location": 0, "relation_name": "",
			"exclude_list": []any{}, "replace_list": []any{}, "columns": false, "expr": nil, "qualified_exclude_list": []any{}, "rename_list": []any{}}},
		"from_table":        map[string]any{"type": "EMPTY", "alias": "", "sample": nil, "query_location": 0},
		"where_clause":      e,
		"group_expressions": []any{}, "group_sets": []any{}, "aggregate_handling": "STANDARD_HANDLING",
		"having": nil, "sample": nil, "qualify": nil}}}}
	q, err := deserialize(ctx, s, doc)
	if err != nil {
		return "", err
	}
	const prefix = "SELECT * WHERE "
	if !strings.HasPrefix(q, prefix) {
		return "", fmt.Errorf("the condition could not be rendered (%s)", q)
	}
	return q[len(prefix):], nil
}

func deserialize(ctx context.Context, s Session, doc any) (string, error) {
	b, err := json.Marshal(doc)
	if err != nil {
		return "", err
	}
	res, err := s.Strings(ctx, "SELECT json_deserialize_sql(?::JSON)::VARCHAR", string(b))
	if err != nil {
		return "", fmt.Errorf("render the query: %w", err)
	}
	if len(res) != 1 || len(res[0]) != 1 {
		return "", fmt.Errorf("render the query: no answer")
	}
	return res[0][0], nil
}

// joinRuleFor is Rule for a transform with the key columns keys: a join
// whose key cannot maintain it is rebuilt in full (RuleFor asks it for
// every query that is not a GROUP BY).
func (p *Plan) joinRuleFor(keys []string) (rule, reason string) {
	rule, reason = p.Rule(len(keys) > 0)
	if rule == RuleJoin {
		if why := p.join.keyReason(keys); why != "" {
			return RuleFull, why
		}
	}
	return rule, reason
}

// keyReason says why keys cannot maintain the join ("" when they can):
// each must be a column of a table that is never NULL-extended, selected
// as alias.column, so that a key names the same output row whether or
// not the row's left joins matched.
func (jp *joinPlan) keyReason(keys []string) string {
	for _, k := range keys {
		ref, ok := jp.items[k]
		if !ok {
			return fmt.Sprintf("the query joins tables and its key column %q is not selected as table.column", k)
		}
		i := slices.IndexFunc(jp.tables, func(t joinTable) bool { return strings.EqualFold(t.alias, ref[0]) })
		if i < 0 {
			return fmt.Sprintf("the query joins tables and its key column %q is not a column of one of them", k)
		}
		if jp.tables[i].left {
			return fmt.Sprintf("the query joins tables and its key column %q comes from %s, the NULL-extended side of a LEFT JOIN", k, jp.tables[i].name)
		}
	}
	return ""
}

// keyList is the select list of the key columns (alias.column AS key).
func (jp *joinPlan) keyList(keys []string) []any {
	var list []any
	for _, k := range keys {
		ref := jp.items[k]
		list = append(list, map[string]any{"class": "COLUMN_REF", "type": "COLUMN_REF", "alias": k, "query_location": 0,
			"column_names": []any{ref[0], ref[1]}})
	}
	return list
}

// variant renders the query with table i read from schemas[i] (as view
// t<i>), the join whose right side is table inner made inner, the select
// list replaced by list (parse-tree items: the key columns, or the group
// expressions of a GROUP BY), and without WHERE, GROUP BY and HAVING.
func (jp *joinPlan) variant(ctx context.Context, s Session, list []any, schemas []string, inner int) (string, error) {
	var stmt map[string]any
	if err := json.Unmarshal(jp.stmt, &stmt); err != nil {
		return "", err
	}
	node, _ := stmt["node"].(map[string]any)
	i := 0
	var fix func(ft map[string]any)
	fix = func(ft map[string]any) {
		switch ft["type"] {
		case "BASE_TABLE":
			ft["alias"] = jp.tables[i].alias
			ft["catalog_name"] = ""
			ft["schema_name"] = schemas[i]
			ft["table_name"] = fmt.Sprintf("t%d", i)
			i++
		case "JOIN":
			l, _ := ft["left"].(map[string]any)
			r, _ := ft["right"].(map[string]any)
			fix(l)
			if i == inner {
				ft["join_type"] = "INNER"
			}
			fix(r)
		}
	}
	from, _ := node["from_table"].(map[string]any)
	fix(from)
	node["select_list"] = list
	node["where_clause"] = nil
	node["group_expressions"], node["group_sets"], node["having"] = []any{}, []any{}, nil
	node["aggregate_handling"] = "STANDARD_HANDLING"
	return deserialize(ctx, s, map[string]any{"error": false, "statements": []any{stmt}})
}

// join maintains a join by key. With O the result over the old state of
// every table and N over the new one, the destination holds O; floe
// computes a set K of keys that holds every key whose rows differ
// between O and N, replaces the destination's rows of those keys by N's
// and deletes the keys of K that N does not have. K is the union, over
// the old state (deleted images) and the new one (inserted images), of
// the keys of
//   - the query with one changed table read as its changed rows only, the
//     others whole at that state (a LEFT join to it made inner: rows that
//     hold a changed row are rows where it matched);
//   - for a LEFT-joined table that changed, the query at that state
//     restricted to rows whose left side matches one of its changed rows
//     of the other state: rows that are NULL-extended on one side and
//     matched on the other.
//
// Keys are columns of tables that are never NULL-extended, so a key
// names its row whether or not its left joins matched. The old state of
// a table is its new state minus the inserted images plus the deleted
// ones (net changes since the last build).
func (r *run) maintainJoin() error {
	jp := r.plan.join
	keys := r.spec.Keys
	st, err := r.joinDelta(jp.keyList(keys), keys, "__floe_keys")
	if err != nil {
		return err
	}
	changed, colsOf, whole := st.changed, st.cols, st.whole
	match := make([]string, len(keys))
	for i, k := range keys {
		match[i] = fmt.Sprintf("q.%s = k.%s", quoteIdent(k), quoteIdent(k))
	}
	// The recompute reads the tables not read whole: the key's table
	// first (by key), then the others by its rows' join values.
	owner := r.keyOwner()
	order := make([]int, 0, len(jp.tables))
	if owner >= 0 {
		order = append(order, owner)
	}
	for i := range jp.tables {
		if i != owner {
			order = append(order, i)
		}
	}
	for _, i := range order {
		if whole[i] {
			continue
		}
		pred, err := r.keyPredicate(i)
		if err != nil {
			return err
		}
		if pred == nil && owner >= 0 && i != owner {
			if pred, err = r.recomputePredicate(i, owner); err != nil {
				return err
			}
		}
		if err := r.bindState(i, pred, colsOf[i], changed[i]); err != nil {
			return err
		}
	}
	if err := r.materialize("__floe_upsert", fmt.Sprintf("SELECT q.* FROM (%s) AS q SEMI JOIN __floe_keys k ON %s", r.spec.Query, strings.Join(match, " AND "))); err != nil {
		return err
	}
	if err := r.checkUnique("__floe_upsert", "the query's result"); err != nil {
		return err
	}
	q := fmt.Sprintf(`SELECT *, '%s' AS %s FROM __floe_upsert
UNION ALL BY NAME
SELECT *, '%s' AS %s FROM __floe_keys q ANTI JOIN __floe_upsert k ON %s`,
		changelog.Insert, changelog.ChangeTypeColumn, changelog.Delete, changelog.ChangeTypeColumn, strings.Join(match, " AND "))
	sch, seq, err := r.s.Query(r.ctx, q)
	if err != nil {
		return err
	}
	return r.ctx.Output("destination").ApplyChangelog(transform.NewRows(sch, seq), keys...)
}

// joinState is what the delta queries of a join leave for the
// recompute: which tables changed, their data columns (quoted, "*" when
// unchanged), and which are bound whole (the others are bound through a
// join predicate or not yet).
type joinState struct {
	changed []bool
	cols    []string
	whole   []bool
}

// joinDelta binds the tables' changes and states and materializes into
// the table into the union of the delta queries (see maintainJoin)
// projecting list (parse-tree select items named names): for the join
// rule the key columns, for the group-by-join rule the group
// expressions.
func (r *run) joinDelta(list []any, names []string, into string) (*joinState, error) {
	jp := r.joinPlan()
	changed := make([]bool, len(jp.tables))
	colsOf := make([]string, len(jp.tables))
	for _, sch := range []string{"__floe_new", "__floe_old", "__floe_ins", "__floe_del"} {
		if err := r.s.Exec(r.ctx, "CREATE SCHEMA IF NOT EXISTS "+sch); err != nil {
			return nil, err
		}
	}
	for i, t := range jp.tables {
		in := r.ctx.Input(t.name)
		// An input without new snapshots has no changes to read.
		changed[i] = in.Changed()
		var cols string
		if changed[i] {
			chg := fmt.Sprintf("__floe_changes_%d", i)
			data, err := r.bindChanges(t.name, chg)
			if err != nil {
				return nil, err
			}
			cols = strings.Join(data, ", ")
			for _, side := range []struct{ kind, schema string }{{changelog.Insert, "__floe_ins"}, {changelog.Delete, "__floe_del"}} {
				if err := r.s.Exec(r.ctx, fmt.Sprintf("CREATE OR REPLACE VIEW %s.t%d AS SELECT %s FROM %s WHERE %s = '%s'",
					side.schema, i, cols, chg, changelog.ChangeTypeColumn, side.kind)); err != nil {
					return nil, err
				}
			}
			n, err := r.s.Strings(r.ctx, "SELECT count(*) FROM "+chg)
			if err != nil {
				return nil, err
			}
			changed[i] = len(n) == 1 && n[0][0] != "0"
		}
		if !changed[i] {
			// Its changed rows are never read: no views of them.
			cols = "*"
		}
		colsOf[i] = cols
	}
	// A table's whole state is read when another table changed (the
	// delta rule joins that one's changes with it) or when it is
	// LEFT-joined and changed (its rows NULL-extend others); else only
	// the rows of the keys to recompute are read, after those are known.
	//
	// A table that the changed tables join by a plain column equality
	// (fact.dim_id = dim.id, the key's table or a dimension) is read, for
	// the keys to recompute, through a filter on that column (the changed
	// rows' values; files pruned by their statistics) instead of whole: a
	// row of the delta query holds a changed row, so its row of the table
	// has the changed row's value (see joinPredicate); after the keys are
	// known it is read again, by key or by the key's rows' join values
	// (see recomputePredicate). A LEFT-joined table that changed stays
	// whole: the second delta query reads its rows that match any row of
	// the left side, not only rows of the changed ones.
	whole := make([]bool, len(jp.tables))
	for i, t := range jp.tables {
		for j := range jp.tables {
			if j != i && changed[j] {
				whole[i] = true
			}
		}
		if changed[i] && t.left {
			whole[i] = true
		}
		if !whole[i] {
			continue
		}
		var pred *string
		if !(changed[i] && t.left) {
			var err error
			if pred, err = r.joinPredicate(i, changed); err != nil {
				return nil, err
			}
		}
		if pred != nil {
			whole[i] = false
		}
		if err := r.bindState(i, pred, colsOf[i], changed[i]); err != nil {
			return nil, err
		}
	}
	var parts []string
	where := func(q string, extra ...string) string {
		var conds []string
		if jp.where != "" {
			conds = append(conds, jp.where)
		}
		conds = append(conds, extra...)
		if len(conds) == 0 {
			return q
		}
		return q + " WHERE " + strings.Join(conds, " AND ")
	}
	for _, st := range []struct{ state, delta, other string }{{"__floe_old", "__floe_del", "__floe_ins"}, {"__floe_new", "__floe_ins", "__floe_del"}} {
		for i, t := range jp.tables {
			if !changed[i] {
				continue
			}
			schemas := make([]string, len(jp.tables))
			for j := range schemas {
				schemas[j] = st.state
			}
			schemas[i] = st.delta
			inner := -1
			if t.left {
				inner = i
			}
			q, err := jp.variant(r.ctx, r.s, list, schemas, inner)
			if err != nil {
				return nil, err
			}
			parts = append(parts, where(q))
			if !t.left {
				continue
			}
			schemas[i] = st.state
			q, err = jp.variant(r.ctx, r.s, list, schemas, -1)
			if err != nil {
				return nil, err
			}
			parts = append(parts, where(q, fmt.Sprintf("EXISTS (SELECT 1 FROM %s.t%d AS %s WHERE %s)", st.other, i, quoteIdent(t.alias), t.cond)))
		}
	}
	if len(parts) == 0 {
		quoted := make([]string, len(names))
		for i, n := range names {
			quoted[i] = quoteIdent(n)
		}
		parts = append(parts, "SELECT NULL AS "+strings.Join(quoted, ", NULL AS ")+" WHERE false")
	}
	if err := r.materialize(into, strings.Join(parts, "\nUNION\n")); err != nil {
		return nil, err
	}
	return &joinState{changed: changed, cols: colsOf, whole: whole}, nil
}

// bindState binds the new state of table i (the rows matching pred when
// it is not nil), its old state, and the query's name for it.
func (r *run) bindState(i int, pred *string, cols string, changed bool) error {
	t := r.joinPlan().tables[i]
	in := r.ctx.Input(t.name)
	if pred != nil {
		in = in.Filter(*pred)
	}
	cur, err := in.Current()
	if err != nil {
		return err
	}
	if err := r.s.Bind(r.ctx, "__floe_new", fmt.Sprintf("t%d", i), cur); err != nil {
		return fmt.Errorf("input %s: %w", t.name, err)
	}
	old := fmt.Sprintf("SELECT %s FROM __floe_new.t%d", cols, i)
	if changed {
		old = fmt.Sprintf("(SELECT %s FROM __floe_new.t%[2]d EXCEPT ALL SELECT * FROM __floe_ins.t%[2]d) UNION ALL SELECT * FROM __floe_del.t%[2]d", cols, i)
	}
	if err := r.s.Exec(r.ctx, fmt.Sprintf("CREATE OR REPLACE VIEW __floe_old.t%d AS %s", i, old)); err != nil {
		return err
	}
	ns, name, err := splitName(t.name)
	if err != nil {
		return err
	}
	return r.s.Exec(r.ctx, fmt.Sprintf("CREATE SCHEMA IF NOT EXISTS %s; CREATE OR REPLACE VIEW %s.%s AS SELECT * FROM __floe_new.t%d",
		quoteIdent(ns), quoteIdent(ns), quoteIdent(name), i))
}

// maxPrunedKeys bounds the keys of a read pruned by key.
const maxPrunedKeys = 100_000

// keyPredicate returns a filter of table i to the rows whose key is in
// __floe_keys (files pruned by their statistics), or nil (read it whole)
// when the key is not one integer or string column of that table, or
// there are too many keys.
func (r *run) keyPredicate(i int) (*string, error) {
	jp := r.joinPlan()
	if len(r.spec.Keys) != 1 {
		return nil, nil
	}
	ref := jp.items[r.spec.Keys[0]]
	if !strings.EqualFold(ref[0], jp.tables[i].alias) || !plainIdent(ref[1]) {
		return nil, nil
	}
	k := quoteIdent(r.spec.Keys[0])
	rows, err := r.s.Strings(r.ctx, fmt.Sprintf("SELECT typeof(%s), count(*)::VARCHAR FROM __floe_keys GROUP BY ALL", k))
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		p := ref[1] + " IS NULL AND " + ref[1] + " IS NOT NULL"
		return &p, nil
	}
	if len(rows) != 1 {
		return nil, nil
	}
	var render string
	switch rows[0][0] {
	case "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT":
		render = k + "::VARCHAR"
	case "VARCHAR":
		render = `'''' || replace(` + k + `, '''', '''''') || ''''`
	default:
		return nil, nil
	}
	if n, _ := strconv.Atoi(rows[0][1]); n > maxPrunedKeys {
		return nil, nil
	}
	vals, err := r.s.Strings(r.ctx, fmt.Sprintf("SELECT string_agg(%s, ', '), min(%s)::VARCHAR, max(%[2]s)::VARCHAR FROM __floe_keys", render, k))
	if err != nil {
		return nil, err
	}
	p := bounded(ref[1], rows[0][0] != "VARCHAR", vals[0])
	return &p, nil
}

// bounded renders col IN (values[0]), and for integers, col BETWEEN
// values[1] AND values[2] before it: iceberg-go prunes files by an IN of
// at most 200 values only (its inPredicateLimit), by a range always.
func bounded(col string, integer bool, values []string) string {
	in := col + " IN (" + values[0] + ")"
	if !integer || values[1] == "" || values[2] == "" {
		return in
	}
	return fmt.Sprintf("%s >= %s AND %s <= %s AND %s", col, values[1], col, values[2], in)
}

// ownsKey reports whether the transform's key is one plain column of
// table i (keyPredicate can then read it by key).
func (r *run) ownsKey(i int) bool {
	if len(r.spec.Keys) != 1 {
		return false
	}
	ref := r.joinPlan().items[r.spec.Keys[0]]
	return strings.EqualFold(ref[0], r.joinPlan().tables[i].alias) && plainIdent(ref[1])
}

// keyOwner is the table whose column the key is (-1 when the key is not
// one plain column of one table).
func (r *run) keyOwner() int {
	for i := range r.joinPlan().tables {
		if r.ownsKey(i) {
			return i
		}
	}
	return -1
}

// equality returns the columns (of i, of j) of a conjunct i.x = j.y of
// the ON condition of whichever of the two tables comes later in FROM
// order ("" when there is none).
func (jp *joinPlan) equality(i, j int) (mine, theirs string) {
	ti, tj := jp.tables[i], jp.tables[j]
	later := tj
	if i > j {
		later = ti
	}
	for _, eq := range later.eqs {
		for s := range 2 {
			a, b := eq[s], eq[1-s]
			if strings.EqualFold(a[0], ti.alias) && strings.EqualFold(b[0], tj.alias) {
				mine, theirs = a[1], b[1]
			}
		}
	}
	return mine, theirs
}

// recomputePredicate returns a filter of table i (not the key's table
// owner) for the query over the keys to recompute: i.x IN (the values of
// owner.y in owner's rows of those keys), when i.x = owner.y is a
// conjunct of the later one's ON condition (nil, read it whole, when not
// or when there are too many values). Every row of the result with a
// key of __floe_keys holds owner's row of that key, and i's row in it,
// if any, has that row's value: when i comes later its ON condition
// says so, and a prefix row that i would NULL-extend has no match in
// the rest of i either; when i comes earlier, owner's ON condition (an
// inner join) drops the rows whose row of i has another value or is
// NULL. So the query gives the same rows for those keys.
func (r *run) recomputePredicate(i, owner int) (*string, error) {
	jp := r.joinPlan()
	mine, theirs := jp.equality(i, owner)
	if mine == "" || !plainIdent(mine) || !plainIdent(theirs) {
		return nil, nil
	}
	f, want, err := filterColumn(r.ctx.Input(jp.tables[i].name), mine, false)
	if err != nil || want == "" {
		return nil, err
	}
	ref := jp.items[r.spec.Keys[0]]
	k := quoteIdent(r.spec.Keys[0])
	rows := fmt.Sprintf("(SELECT o.%s AS %[1]s FROM __floe_new.t%d AS o SEMI JOIN __floe_keys AS k ON o.%s = k.%s) AS __floe_vals",
		quoteIdent(theirs), owner, quoteIdent(ref[1]), k)
	return r.inList(expr.QuoteIdent(f), rows, theirs, want)
}

// joinPredicate returns a filter of table i to the rows that can join
// the changed rows of every changed table (col IN (their values), one
// IN per changed table, ORed), or nil (read it whole) when a changed
// table is not joined to i by a plain equality of integer or string
// columns, or has too many values.
//
// A row of the delta query of a changed table j holds one of j's
// changed rows: its row of i has the changed row's value (when i comes
// later, by i's ON condition; when i comes earlier, by j's, made inner,
// which drops the rows whose row of i has another value or is NULL).
// For a LEFT-joined j that changed, the second delta query reads j
// whole and keeps the rows whose left side matches a changed row of j:
// when i comes earlier its row in them has a changed row's value (j's
// ON condition again), but when i comes later it joins j's rows of that
// state, changed or not, so i is read whole.
func (r *run) joinPredicate(i int, changed []bool) (*string, error) {
	jp := r.joinPlan()
	ti := jp.tables[i]
	in := r.ctx.Input(ti.name)
	var ors []string
	for j, tj := range jp.tables {
		if j == i || !changed[j] {
			continue
		}
		if tj.left && i > j {
			return nil, nil
		}
		mine, theirs := jp.equality(i, j)
		if mine == "" || !plainIdent(mine) {
			return nil, nil
		}
		f, want, err := filterColumn(in, mine, false)
		if err != nil {
			return nil, err
		}
		if want == "" {
			return nil, nil
		}
		in, err := r.inList(expr.QuoteIdent(f), fmt.Sprintf("__floe_changes_%d", j), theirs, want)
		if err != nil || in == nil {
			return nil, err
		}
		ors = append(ors, *in)
	}
	if len(ors) == 0 {
		return nil, nil
	}
	p := "(" + strings.Join(ors, ") OR (") + ")"
	return &p, nil
}

// inList returns col IN (the distinct non-NULL values of column from of
// table), "col IS NULL AND col IS NOT NULL" when it has none, or nil when
// they are not of the kind want ("integer" or "string", as col is) or
// are more than maxPrunedKeys.
func (r *run) inList(col, table, from, want string) (*string, error) {
	k := quoteIdent(from)
	rows, err := r.s.Strings(r.ctx, fmt.Sprintf("SELECT typeof(%s), count(DISTINCT %[1]s)::VARCHAR FROM %s WHERE %[1]s IS NOT NULL GROUP BY ALL", k, table))
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		p := col + " IS NULL AND " + col + " IS NOT NULL"
		return &p, nil
	}
	if len(rows) != 1 {
		return nil, nil
	}
	var render string
	switch rows[0][0] {
	case "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT":
		if want != "integer" {
			return nil, nil
		}
		render = k + "::VARCHAR"
	case "VARCHAR":
		if want != "string" {
			return nil, nil
		}
		render = `'''' || replace(` + k + `, '''', '''''') || ''''`
	default:
		return nil, nil
	}
	if n, _ := strconv.Atoi(rows[0][1]); n > maxPrunedKeys {
		return nil, nil
	}
	vals, err := r.s.Strings(r.ctx, fmt.Sprintf("SELECT string_agg(DISTINCT %s, ', '), min(%s)::VARCHAR, max(%[2]s)::VARCHAR FROM %s WHERE %[2]s IS NOT NULL", render, k, table))
	if err != nil {
		return nil, err
	}
	p := bounded(col, want == "integer", vals[0])
	return &p, nil
}

func plainIdent(s string) bool {
	for i, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

// filterColumn finds the column name of in (case-insensitively if fold)
// for a pruning filter and the kind of literal it compares with:
// "integer", "string", or "" when a filter on it is not pushed (other
// types, or no such column). It asks for the rows' Arrow schema, which an
// Iceberg and a Delta input both have: an Iceberg scan prunes files by the
// filter, a Delta read applies it to the rows before they are staged.
func filterColumn(in *transform.Input, name string, fold bool) (string, string, error) {
	sch, err := in.ArrowSchema()
	if err != nil {
		return "", "", fmt.Errorf("input %s: %w", in.Name(), err)
	}
	for _, f := range sch.Fields() {
		if f.Name != name && !(fold && strings.EqualFold(f.Name, name)) {
			continue
		}
		switch f.Type.ID() {
		case arrow.INT32, arrow.INT64:
			return f.Name, "integer", nil
		case arrow.STRING, arrow.LARGE_STRING:
			return f.Name, "string", nil
		}
		return f.Name, "", nil
	}
	return "", "", nil
}

// joinPlan is the join of the query the run maintains: the join rule's,
// or the FROM of the group-by-join rule's GROUP BY.
func (r *run) joinPlan() *joinPlan {
	if r.plan.join == nil && r.plan.GroupBy != nil {
		return r.plan.GroupBy.join
	}
	return r.plan.join
}
