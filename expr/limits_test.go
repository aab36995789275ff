package expr_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/floedata/floe/expr"
)

// TestLimits: input past each documented limit is an error wrapping
// ErrLimit that says which limit, never a crash; input at the limit parses.
func TestLimits(t *testing.T) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true}}, nil)
	in := func(n int) string {
		return "id IN (" + strings.TrimSuffix(strings.Repeat("1, ", n), ", ") + ")"
	}
	for _, tc := range []struct {
		name string
		src  string
		ok   bool
		want string // in the error
	}{
		{"parens at the limit", strings.Repeat("(", expr.MaxDepth-1) + "id = 1" + strings.Repeat(")", expr.MaxDepth-1), true, ""},
		{"parens past the limit", strings.Repeat("(", expr.MaxDepth+1) + "id = 1" + strings.Repeat(")", expr.MaxDepth+1), false, "nested more than"},
		{"200k parens", strings.Repeat("(", 200000) + "id = 1" + strings.Repeat(")", 200000), false, "nested more than"},
		{"600k parens", strings.Repeat("(", 600000) + "id = 1" + strings.Repeat(")", 600000), false, "longer than"},
		{"100k parens", strings.Repeat("(", 100000) + "id = 1" + strings.Repeat(")", 100000), false, "nested more than"},
		{"nested calls", strings.Repeat("ABS(", expr.MaxDepth+1) + "id" + strings.Repeat(")", expr.MaxDepth+1) + " = 1", false, "nested more than"},
		{"nested CASE", strings.Repeat("CASE WHEN TRUE THEN ", expr.MaxDepth+1) + "id" + strings.Repeat(" END", expr.MaxDepth+1) + " = 1", false, "nested more than"},
		{"unary minus", strings.Repeat("- ", expr.MaxDepth+1) + "id = 1", false, "nested more than"},
		{"long NOT chain", strings.Repeat("NOT ", 30000) + "id = 1", true, ""},
		{"long OR chain", "id = 0" + strings.Repeat(" OR id = 1", 30000), true, ""},
		{"too long", "id = 1" + strings.Repeat(" ", expr.MaxLength), false, "longer than"},
		{"IN at the limit", in(expr.MaxInValues), true, ""},
		{"IN past the limit", in(expr.MaxInValues + 1), false, "IN list"},
		{"name at the limit", "`" + strings.Repeat("x", expr.MaxNameLength) + "` IS NULL", true, ""},
		{"name past the limit", strings.Repeat("x", expr.MaxNameLength+1) + " IS NULL", false, "name longer than"},
		{"quoted name past the limit", "`" + strings.Repeat("x", expr.MaxNameLength+1) + "` IS NULL", false, "name longer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := expr.Parse(tc.src)
			if tc.ok {
				if err != nil {
					t.Fatalf("within the limits: %v", err)
				}
				if strings.Contains(tc.src, "`") {
					return // the long name is no column of the schema
				}
				if _, err := expr.Compile(e, schema); err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, expr.ErrLimit) || !errors.Is(err, expr.ErrSyntax) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %v mentioning %q", err, expr.ErrLimit, tc.want)
			}
			if _, err := expr.ParseMerge("MERGE INTO t USING s ON " + tc.src + " WHEN MATCHED THEN DELETE"); !errors.Is(err, expr.ErrLimit) {
				t.Fatalf("MERGE: got %v, want %v", err, expr.ErrLimit)
			}
		})
	}
}

// TestCaretLongLine: the caret line of a long input shows a window around
// the position, not the whole input.
func TestCaretLongLine(t *testing.T) {
	src := strings.Repeat("(", 5000) + "id = 1" + strings.Repeat(")", 5000)
	_, err := expr.Parse(src)
	if err == nil {
		t.Fatal("parsed")
	}
	out := expr.FormatError(src, err)
	if len(out) > 400 {
		t.Fatalf("%d bytes:\n%s", len(out), out)
	}
	lines := strings.Split(out, "\n")
	caret := strings.Index(lines[2], "^")
	if caret < 0 || lines[1][caret:caret+1] != "(" || !strings.HasPrefix(lines[1], "…") || !strings.HasSuffix(lines[1], "…") {
		t.Fatalf("caret misplaced:\n%s", out)
	}
	for _, src := range []string{"id = 1 AND AND x", "é = 'ü' AND AND", strings.Repeat("é", 300) + " AND"} {
		_, err := expr.Parse(src)
		out := expr.FormatError(src, err)
		lines := strings.Split(out, "\n")
		if len(lines) != 3 || !strings.HasSuffix(lines[2], "^") {
			t.Fatalf("%q:\n%s", src, out)
		}
	}
}
