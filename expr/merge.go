package expr

import (
	"fmt"
	"strings"
)

// Merge is a parsed MERGE INTO statement. It is only syntax: which rows
// match and what happens to them is decided by the merge package.
type Merge struct {
	// Target is the target table's dotted name, one part per identifier
	// (["ns", "tbl"] for ns.tbl).
	Target []string
	// TargetAlias is the alias after the target name, "" when none.
	TargetAlias string
	Source      MergeSource
	// SourceAlias is the alias after the source, "" when none.
	SourceAlias string
	// On is the match condition.
	On Expr
	// Clauses are the WHEN clauses in the order they are tried.
	Clauses []MergeClause
}

// MergeSource is the USING part of a MERGE: a table (Table set), a file
// path given as a string literal (Path set), or a subquery over one table
// (Query set; Table and Path are empty).
type MergeSource struct {
	Pos   int
	Table []string
	Path  string
	Query *Select
}

// MatchKind says which rows a MERGE clause applies to.
type MatchKind int

const (
	// Matched is WHEN MATCHED: target rows with a matching source row.
	Matched MatchKind = iota
	// NotMatched is WHEN NOT MATCHED [BY TARGET]: source rows without a
	// matching target row.
	NotMatched
	// NotMatchedBySource is WHEN NOT MATCHED BY SOURCE: target rows without a
	// matching source row.
	NotMatchedBySource
)

// String returns the kind as written in a WHEN clause.
func (k MatchKind) String() string {
	return [...]string{"MATCHED", "NOT MATCHED", "NOT MATCHED BY SOURCE"}[k]
}

// ActionKind is what a MERGE clause does.
type ActionKind int

const (
	// ActionDelete is THEN DELETE.
	ActionDelete ActionKind = iota
	// ActionUpdate is THEN UPDATE SET col = expr, ... (MergeClause.Set).
	ActionUpdate
	// ActionUpdateAll is THEN UPDATE SET *.
	ActionUpdateAll
	// ActionInsert is THEN INSERT (cols) VALUES (exprs) (MergeClause.Columns
	// and MergeClause.Values, of equal length).
	ActionInsert
	// ActionInsertAll is THEN INSERT *.
	ActionInsertAll
)

// MergeClause is one WHEN clause.
type MergeClause struct {
	// Pos is the offset of the clause's WHEN keyword.
	Pos    int
	Match  MatchKind
	Cond   Expr // the AND condition; nil when absent
	Action ActionKind
	Set    []Assignment
	// Columns and Values are the INSERT column list and values.
	Columns []*ColumnRef
	Values  []Expr
}

// ParseMerge parses a MERGE INTO statement:
//
//	MERGE INTO <table> [[AS] t] USING <table | 'path' | (SELECT ...)> [[AS] s] ON <expr>
//	WHEN MATCHED [AND <cond>] THEN DELETE | UPDATE SET * | UPDATE SET a = e, ...
//	WHEN NOT MATCHED [BY TARGET] [AND <cond>] THEN INSERT * | INSERT (cols) VALUES (exprs)
//	WHEN NOT MATCHED BY SOURCE [AND <cond>] THEN DELETE | UPDATE SET a = e, ...
//
// Keywords are case-insensitive and a trailing semicolon is allowed. Besides
// malformed syntax, it rejects with a *SyntaxError: statements without a
// WHEN clause, a clause that can never run because an earlier clause of the
// same kind has no condition, INSERT lists whose column and value counts
// differ, and columns listed or assigned twice. A subquery source is
// SELECT * | expr [[AS] name], ... FROM <table> [[AS] alias] [WHERE <expr>]:
// one table, no joins, grouping, ordering or nested subqueries.
func ParseMerge(sql string) (*Merge, error) {
	p, err := newParser(sql)
	if err != nil {
		return nil, err
	}
	m := &Merge{}
	if _, err := p.expectKeyword("MERGE"); err != nil {
		return nil, err
	}
	if _, err := p.expectKeyword("INTO"); err != nil {
		return nil, err
	}
	if m.Target, err = p.parseTableName(); err != nil {
		return nil, err
	}
	if m.TargetAlias, err = p.parseAlias("USING"); err != nil {
		return nil, err
	}
	if _, err := p.expectKeyword("USING"); err != nil {
		return nil, err
	}
	src := p.peek()
	m.Source.Pos = src.pos
	switch {
	case src.kind == tString:
		p.next()
		if src.text == "" {
			return nil, p.errAt(src.pos, "empty source path")
		}
		m.Source.Path = src.text
	case src.kind == tIdent || src.kind == tQIdent:
		if m.Source.Table, err = p.parseTableName(); err != nil {
			return nil, err
		}
	case src.kind == tOp && src.text == "(":
		p.next()
		if m.Source.Query, err = p.parseSelect(); err != nil {
			return nil, err
		}
		if _, err := p.expectOp(")"); err != nil {
			return nil, err
		}
	default:
		return nil, p.expected("a source table name, a (SELECT ...) subquery or a quoted file path")
	}
	if m.SourceAlias, err = p.parseAlias("ON"); err != nil {
		return nil, err
	}
	if m.TargetAlias != "" && strings.EqualFold(m.TargetAlias, m.SourceAlias) {
		return nil, p.errAt(m.Source.Pos, fmt.Sprintf("source alias %s is the same as the target alias", m.SourceAlias))
	}
	if _, err := p.expectKeyword("ON"); err != nil {
		return nil, err
	}
	if m.On, err = p.parseExpr(); err != nil {
		return nil, err
	}
	unconditional := map[MatchKind]int{}
	for p.atKeyword("WHEN") {
		c, err := p.parseMergeClause()
		if err != nil {
			return nil, err
		}
		if at, ok := unconditional[c.Match]; ok {
			return nil, p.errAt(c.Pos, fmt.Sprintf("this WHEN %s clause is never reached: the WHEN %s clause at position %d has no AND condition and catches every row first", c.Match, c.Match, at))
		}
		if c.Cond == nil {
			unconditional[c.Match] = c.Pos
		}
		m.Clauses = append(m.Clauses, c)
	}
	if len(m.Clauses) == 0 {
		return nil, p.expected(`"WHEN"`)
	}
	p.acceptOp(";")
	if err := p.expectEOF(); err != nil {
		return nil, err
	}
	return m, nil
}

// parseTableName parses a dotted name of plain or backquoted identifiers.
func (p *parser) parseTableName() ([]string, error) {
	var parts []string
	for {
		t := p.peek()
		if t.kind != tIdent && t.kind != tQIdent {
			return nil, p.expected("a table name")
		}
		p.next()
		parts = append(parts, t.text)
		if !p.acceptOp(".") {
			return parts, nil
		}
	}
}

// parseAlias parses an optional [AS] alias that stops before keyword next.
func (p *parser) parseAlias(next string) (string, error) {
	as := p.acceptKeyword("AS")
	t := p.peek()
	if t.kind == tQIdent || (t.kind == tIdent && !p.isKeyword(t, next) && !reserved[strings.ToUpper(t.text)]) {
		p.next()
		return t.text, nil
	}
	if as {
		return "", p.expected("an alias")
	}
	return "", nil
}

func (p *parser) parseMergeClause() (MergeClause, error) {
	w := p.next() // WHEN
	c := MergeClause{Pos: w.pos}
	switch {
	case p.acceptKeyword("MATCHED"):
		c.Match = Matched
	case p.acceptKeyword("NOT"):
		if _, err := p.expectKeyword("MATCHED"); err != nil {
			return c, err
		}
		c.Match = NotMatched
		if p.acceptKeyword("BY") {
			switch {
			case p.acceptKeyword("TARGET"):
			case p.acceptKeyword("SOURCE"):
				c.Match = NotMatchedBySource
			default:
				return c, p.expected("TARGET or SOURCE")
			}
		}
	default:
		return c, p.expected("MATCHED or NOT MATCHED")
	}
	if p.acceptKeyword("AND") {
		cond, err := p.parseExpr()
		if err != nil {
			return c, err
		}
		c.Cond = cond
	}
	if _, err := p.expectKeyword("THEN"); err != nil {
		return c, err
	}
	act := p.peek()
	switch {
	case p.acceptKeyword("DELETE"):
		if c.Match == NotMatched {
			return c, p.errAt(act.pos, "WHEN NOT MATCHED clauses can only INSERT: there is no target row to delete")
		}
		c.Action = ActionDelete
	case p.acceptKeyword("UPDATE"):
		if c.Match == NotMatched {
			return c, p.errAt(act.pos, "WHEN NOT MATCHED clauses can only INSERT: there is no target row to update")
		}
		if _, err := p.expectKeyword("SET"); err != nil {
			return c, err
		}
		if star := p.peek(); p.acceptOp("*") {
			if c.Match == NotMatchedBySource {
				return c, p.errAt(star.pos, "UPDATE SET * needs a source row; WHEN NOT MATCHED BY SOURCE clauses must list their assignments")
			}
			c.Action = ActionUpdateAll
			break
		}
		set, err := p.parseAssignments()
		if err != nil {
			return c, err
		}
		c.Action, c.Set = ActionUpdate, set
	case p.acceptKeyword("INSERT"):
		if c.Match != NotMatched {
			return c, p.errAt(act.pos, fmt.Sprintf("WHEN %s clauses can only UPDATE or DELETE", c.Match))
		}
		if p.acceptOp("*") {
			c.Action = ActionInsertAll
			break
		}
		if _, err := p.expectOp("("); err != nil {
			return c, err
		}
		for {
			col, err := p.parseColumnName()
			if err != nil {
				return c, err
			}
			for _, o := range c.Columns {
				if equalFoldParts(o.Parts, col.Parts) {
					return c, p.errAt(col.P, fmt.Sprintf("column %s is listed more than once", col))
				}
			}
			c.Columns = append(c.Columns, col)
			if !p.acceptOp(",") {
				break
			}
		}
		if _, err := p.expectOp(")"); err != nil {
			return c, err
		}
		if _, err := p.expectKeyword("VALUES"); err != nil {
			return c, err
		}
		open, err := p.expectOp("(")
		if err != nil {
			return c, err
		}
		for {
			v, err := p.parseExpr()
			if err != nil {
				return c, err
			}
			c.Values = append(c.Values, v)
			if !p.acceptOp(",") {
				break
			}
		}
		if _, err := p.expectOp(")"); err != nil {
			return c, err
		}
		if len(c.Values) != len(c.Columns) {
			return c, p.errAt(open.pos, fmt.Sprintf("INSERT lists %d column(s) but %d value(s)", len(c.Columns), len(c.Values)))
		}
		c.Action = ActionInsert
	default:
		if c.Match == NotMatched {
			return c, p.expected("INSERT")
		}
		return c, p.expected("DELETE or UPDATE")
	}
	return c, nil
}

// String renders the statement as SQL on one line.
func (m *Merge) String() string {
	var b strings.Builder
	b.WriteString("MERGE INTO " + quoteName(m.Target))
	if m.TargetAlias != "" {
		b.WriteString(" AS " + QuoteIdent(m.TargetAlias))
	}
	b.WriteString(" USING ")
	if m.Source.Query != nil {
		b.WriteString("(" + m.Source.Query.String() + ")")
	} else if m.Source.Table != nil {
		b.WriteString(quoteName(m.Source.Table))
	} else {
		b.WriteString(quoteString(m.Source.Path))
	}
	if m.SourceAlias != "" {
		b.WriteString(" AS " + QuoteIdent(m.SourceAlias))
	}
	b.WriteString(" ON " + m.On.String())
	for _, c := range m.Clauses {
		b.WriteString(" " + c.String())
	}
	return b.String()
}

// String renders the clause as SQL.
func (c MergeClause) String() string {
	var b strings.Builder
	b.WriteString("WHEN " + c.Match.String())
	if c.Cond != nil {
		b.WriteString(" AND " + c.Cond.String())
	}
	b.WriteString(" THEN ")
	switch c.Action {
	case ActionDelete:
		b.WriteString("DELETE")
	case ActionUpdateAll:
		b.WriteString("UPDATE SET *")
	case ActionUpdate:
		parts := make([]string, len(c.Set))
		for i, a := range c.Set {
			parts[i] = a.String()
		}
		b.WriteString("UPDATE SET " + strings.Join(parts, ", "))
	case ActionInsertAll:
		b.WriteString("INSERT *")
	case ActionInsert:
		cols := make([]string, len(c.Columns))
		vals := make([]string, len(c.Values))
		for i := range c.Columns {
			cols[i] = c.Columns[i].String()
			vals[i] = c.Values[i].String()
		}
		b.WriteString("INSERT (" + strings.Join(cols, ", ") + ") VALUES (" + strings.Join(vals, ", ") + ")")
	}
	return b.String()
}

func quoteName(parts []string) string {
	q := make([]string, len(parts))
	for i, p := range parts {
		q[i] = QuoteIdent(p)
	}
	return strings.Join(q, ".")
}
