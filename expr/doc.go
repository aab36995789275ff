// Package expr is floe's SQL expression language: the predicates of
// --where, the assignments of --set, and whole MERGE INTO statements. It
// parses them (Parse, ParseAssignments, ParseMerge), binds them to an Arrow
// schema and evaluates them column-at-a-time on record batches (Compile,
// Program), and converts predicates into iceberg-go expressions for file
// pruning (ToIceberg).
//
// # Language
//
// The dialect follows Spark SQL:
//
//   - Literals: 12 (INT, or BIGINT, or DECIMAL(n,0) by size), 12.50
//     (DECIMAL(4,2), not a float), 1e3 (DOUBLE), suffixes 12Y 12S 12L 1.5F
//     1.5D 1.5BD, 'text' or "text" with doubled quotes inside, TRUE, FALSE,
//     NULL, DATE '2024-01-31', TIMESTAMP '2024-01-31 10:00:00[.ffffff][zone]'
//     (zone Z, UTC or ±hh[:mm]; none means UTC), TIMESTAMP_NTZ '...'.
//   - Names: id, `any name` (a doubled backquote stands for one inside), qualified t.id,
//     struct fields addr.city. Matching is exact first, then
//     case-insensitive; see Compile.
//   - Operators from low to high precedence: OR; AND; NOT; comparisons
//     = == <> != < <= > >= <=>, IS [NOT] NULL, IS [NOT] TRUE|FALSE,
//     [NOT] IN (...), [NOT] BETWEEN a AND b, [NOT] LIKE 'pattern' (% and _,
//     backslash escapes), [NOT] RLIKE|REGEXP 'regexp'; || (concatenation);
//     binary + and -; * / %; unary -; x::type (a cast, binding tightest).
//   - CASE WHEN ... THEN ... [ELSE ...] END, CASE x WHEN v THEN ... END,
//     CAST(x AS type) with Spark's type names: BOOLEAN, TINYINT, SMALLINT,
//     INT, BIGINT, FLOAT, DOUBLE, DECIMAL(p,s), STRING, VARCHAR(n), CHAR(n),
//     BINARY, DATE, TIMESTAMP (with zone, as in Spark), TIMESTAMP_NTZ.
//   - Spark's common scalar functions: conditional (COALESCE, IF, NVL2,
//     ...), string (SUBSTRING, REGEXP_REPLACE, ...), date/time (YEAR,
//     DATE_SUB, DATE_TRUNC, TO_DATE, ...) and math (ROUND, PMOD, ...).
//     Functions lists them; docs/sql.md is rendered from that list by
//     Reference.
//
// # Semantics
//
// Three-valued logic throughout; a filter keeps the rows where the
// predicate is TRUE. Errors follow Spark's ANSI mode: division by zero,
// integer and decimal overflow and invalid casts fail with an *EvalError
// naming the sub-expression and the row, instead of producing NULL. Only
// rows whose value matters can fail: the right side of AND/OR where the left
// side does not decide, the taken branch of CASE, the COALESCE arguments
// still needed.
//
// Types mix as in Spark: integers widen to the larger integer, integers
// with decimals become decimals (literals with the precision of their
// digits), anything with DOUBLE is DOUBLE; INT / INT is a DOUBLE division;
// decimal arithmetic uses Spark's result precision and scale, capped at 38
// digits with at least 6 fraction digits kept, and rounds half up. A string
// literal compared with a date, timestamp or boolean is cast to that type at
// compile time (ts >= '2024-01-01'); one compared with a number is read as a
// number literal ('5.5' is 5.5, compared exactly); a date meets a timestamp
// as midnight UTC;
// timestamps with and without zone compare as UTC instants. Floats compare
// as Spark does: NaN equals NaN and sorts above every number, -0.0 equals
// 0.0.
//
// # Limits
//
// Input is at most MaxLength bytes (1 MiB), nests at most MaxDepth levels
// (1,000: parentheses, function calls, CASE, CAST, IN lists, unary signs;
// chains of AND, OR, NOT, comparisons and arithmetic are bounded by the
// length only), holds at most MaxInValues values per IN list (100,000) and
// names of at most MaxNameLength bytes (1,024). Input past a limit is a
// *SyntaxError wrapping ErrLimit. Within them parsing, binding, evaluation,
// conversion to Iceberg and rendering take time linear in the input
// (BenchmarkChain).
//
// # Errors
//
// Errors carry positions (0-based byte offsets): *SyntaxError from the
// parsers, *BindError from Compile and ToIceberg, *EvalError from
// evaluation. Each wraps a sentinel of errors.go for errors.Is, and
// FormatError draws the source line with a caret under the position.
// CompilePredicate and CompileAssignments, the one way callers turn a
// predicate or a SET list into a pruning filter, columns and a row
// evaluator, return *CompileError values that carry the text too.
//
// # Concurrency
//
// Parsed expressions are not modified by anything in this package.
// Programs, Predicates and Assignments are immutable and safe for
// concurrent use.
package expr
