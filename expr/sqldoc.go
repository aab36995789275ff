package expr

import (
	"fmt"
	"strings"
)

// sqlStatements are the statement forms the language takes, for the
// reference.
var sqlStatements = []struct{ form, where, doc string }{
	{"<predicate>", "`--where` (`table scan`, `delete`, `update`, `overwrite`, `changelog`), YAML `filter`", "A boolean expression; a row is kept (or deleted) where it is TRUE, not where it is FALSE or NULL."},
	{"col = <expr>, ...", "`--set` (`table update`), MERGE `UPDATE SET`", "Assignments; each value is converted to the column's type under Spark's store-assignment rules."},
	{"MERGE INTO <table> [[AS] t] USING <source> [[AS] s] ON <cond> WHEN ...", "`floe merge`, YAML `merge` outputs", "Spark's MERGE INTO with WHEN MATCHED [AND c] THEN DELETE / UPDATE SET * / UPDATE SET col = e, ...; WHEN NOT MATCHED [BY TARGET] [AND c] THEN INSERT * / INSERT (cols) VALUES (exprs); WHEN NOT MATCHED BY SOURCE [AND c] THEN DELETE / UPDATE SET ...; clauses are tried in order."},
	{"USING ns.table", "MERGE source", "A table of the catalog at its current snapshot."},
	{"USING 'file.parquet' / '.csv' / '.jsonl'", "MERGE source", "A file; the format comes from the extension."},
	{"USING (SELECT * | <expr> [[AS] name], ... FROM <table> [[AS] a] [WHERE <cond>])", "MERGE source", "A single-table subquery: the table's rows filtered by WHERE, then projected; the columns are named by their alias, a column's name, or the expression's SQL. Joins, GROUP BY, ORDER BY, LIMIT and nested subqueries are refused."},
	{"catalog.ns.table", "any table name in MERGE, any loaded table", "A catalog-qualified name, as in Spark: the first part is the catalog's name (`floe` for the embedded catalog); another configured catalog's name is an error that says to pass `--catalog`."},
}

// sqlSyntax lists the operators and literal forms, for the reference.
var sqlSyntax = []struct{ form, doc string }{
	{"`12`, `12L`, `12S`, `12Y`, `12.50`, `1e3`, `1.5D`, `1.5F`, `1.5BD`", "INT (or BIGINT, or DECIMAL by size), BIGINT, SMALLINT, TINYINT, DECIMAL(4,2), DOUBLE, DOUBLE, FLOAT, DECIMAL"},
	{"`'text'`, `\"text\"`", "STRING; a doubled quote stands for one; backslashes are not escapes (except in LIKE patterns)"},
	{"`DATE '2024-01-31'`, `TIMESTAMP '2024-01-31 10:00:00[.ffffff][zone]'`, `TIMESTAMP_NTZ '...'`", "typed literals; a timestamp without zone is UTC"},
	{"`TRUE`, `FALSE`, `NULL`", "boolean and NULL literals"},
	{"`INTERVAL 30 DAYS`, `INTERVAL '1' MONTH`, `INTERVAL 1 DAY 2 HOURS`", "interval literals (YEAR, MONTH, WEEK, DAY, HOUR, MINUTE, SECOND; year-month and day-time fields do not mix), only added to or subtracted from a date or timestamp: months first, the day cut to the end of a shorter month; a date stays a date unless the interval has a time part"},
	{"`OR`, `AND`, `NOT`", "three-valued logic, lowest precedence first"},
	{"`=` `==` `<>` `!=` `<` `<=` `>` `>=` `<=>`", "comparisons; `<=>` is NULL-safe equality"},
	{"`IS [NOT] NULL`, `IS [NOT] TRUE/FALSE`, `[NOT] IN (...)`, `[NOT] BETWEEN a AND b`", "predicates"},
	{"`[NOT] LIKE 'pattern'`", "`%` any sequence, `_` any character, `\\` escapes"},
	{"`[NOT] RLIKE 'regexp'`, `[NOT] REGEXP 'regexp'`", "regular-expression match anywhere in the string (RE2 syntax)"},
	{"`\\|\\|`", "string concatenation"},
	{"`+` `-` `*` `/` `%`", "arithmetic; INT / INT is a DOUBLE division; `date + n`, `n + date` and `date - n` add or subtract days"},
	{"`CASE WHEN c THEN r ... [ELSE e] END`, `CASE x WHEN v THEN r ... END`", "conditional expression; only the branch taken is evaluated"},
	{"`CAST(x AS type)`, `x::type`", "conversion with ANSI semantics (a value that does not convert is an error)"},
	{"`name`, `` `any name` ``, `t.name`, `struct.field`", "column references, case-insensitive when unambiguous"},
}

// Reference renders the language reference of docs/sql.md: statements,
// syntax, types and functions, from the declarations the parser and binder
// use.
func Reference() string {
	var b strings.Builder
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	b.WriteString("### Statements\n\n| Form | Where | Meaning |\n|---|---|---|\n")
	for _, s := range sqlStatements {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", cell(s.form), s.where, cell(s.doc))
	}
	b.WriteString("\n### Syntax\n\n| Form | Meaning |\n|---|---|\n")
	for _, s := range sqlSyntax {
		fmt.Fprintf(&b, "| %s | %s |\n", s.form, cell(s.doc))
	}
	b.WriteString("\n### Types\n\nType names of `CAST(x AS type)` and `x::type`, with Spark SQL's meanings.\n\n| Type | Also | Meaning |\n|---|---|---|\n")
	for _, t := range castTypes {
		also := make([]string, 0, len(t.names)-1)
		for _, n := range t.names[1:] {
			also = append(also, "`"+n+"`")
		}
		fmt.Fprintf(&b, "| `%s%s` | %s | %s |\n", t.names[0], t.param, strings.Join(also, ", "), cell(t.doc))
	}
	b.WriteString("\n### Functions\n\nNames are case-insensitive. Unless a line says otherwise, a NULL argument gives NULL, and a value the function cannot take is an error naming the call, its position and the row (Spark's ANSI mode).\n")
	cat := ""
	for _, f := range Functions() {
		if f.Category != cat {
			cat = f.Category
			fmt.Fprintf(&b, "\n#### %s%s\n\n| Function | Also | Meaning |\n|---|---|---|\n", strings.ToUpper(cat[:1]), cat[1:])
		}
		also := make([]string, len(f.Aliases))
		for i, a := range f.Aliases {
			also[i] = "`" + strings.ToLower(a) + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", cell(f.Signature), strings.Join(also, ", "), cell(f.Doc))
	}
	return b.String()
}
