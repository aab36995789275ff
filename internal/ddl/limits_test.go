package ddl_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/floedata/floe/internal/ddl"
)

// TestLimits: nesting and length past the documented limits are syntax
// errors that say so (and quote a bounded part of the input), not a
// stack overflow.
func TestLimits(t *testing.T) {
	nested := func(n int) string {
		return "a " + strings.Repeat("list<", n) + "int" + strings.Repeat(">", n)
	}
	if _, err := ddl.ParseSchema(nested(ddl.MaxTypeDepth), nil); err != nil {
		t.Fatalf("at the limit: %v", err)
	}
	for _, tc := range []struct {
		name, src, want string
	}{
		{"nested lists", nested(ddl.MaxTypeDepth + 1), "nested more than"},
		{"500k nested lists", nested(500000), "longer than"},
		{"50k nested structs", "a " + strings.Repeat("struct<b: ", 50000) + "int" + strings.Repeat(">", 50000), "nested more than"},
		{"long", "a int, " + strings.Repeat("x", ddl.MaxInputLength), "longer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ddl.ParseSchema(tc.src, nil)
			if !errors.Is(err, ddl.ErrSyntax) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %v mentioning %q", err, ddl.ErrSyntax, tc.want)
			}
			if len(err.Error()) > 400 {
				t.Fatalf("the message is %d bytes long", len(err.Error()))
			}
		})
	}
	if _, err := ddl.ParsePartitionFields(strings.Repeat("x", ddl.MaxInputLength+1), nil); !errors.Is(err, ddl.ErrSyntax) {
		t.Fatalf("partition list: got %v", err)
	}
}
