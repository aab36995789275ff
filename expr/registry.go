package expr

import (
	"fmt"
	"sort"
	"strings"
)

// FuncInfo describes a built-in function of the language. docs/sql.md is
// rendered from Functions.
type FuncInfo struct {
	// Name is the canonical name, in upper case (as Call.Name).
	Name string
	// Aliases are other accepted spellings, in upper case.
	Aliases []string
	// Category is "conditional", "string", "date/time" or "math".
	Category string
	// Signature shows the arguments and the result type, in Spark's words:
	// "date_add(start DATE, days INT) -> DATE".
	Signature string
	// Doc says in one line what the function returns.
	Doc string
	// MinArgs and MaxArgs bound the argument count (MaxArgs -1: unbounded).
	MinArgs, MaxArgs int
}

// builtin is a function with its binder. bind is nil for the functions
// binder.call binds itself (COALESCE, CONCAT, ...).
type builtin struct {
	FuncInfo
	bind func(b *binder, e *Call, args []node) (node, error)
}

var (
	builtinList   []*builtin
	builtinByName map[string]*builtin // canonical names and aliases
)

func init() {
	builtinList = append(append([]*builtin{}, coreBuiltins...), sparkBuiltins()...)
	builtinByName = map[string]*builtin{}
	for _, f := range builtinList {
		for _, n := range append([]string{f.Name}, f.Aliases...) {
			if _, dup := builtinByName[n]; dup {
				panic("expr: function " + n + " defined twice")
			}
			builtinByName[n] = f
		}
	}
}

// lookupBuiltin returns the function called name (any case, aliases
// included).
func lookupBuiltin(name string) (*builtin, bool) {
	f, ok := builtinByName[strings.ToUpper(name)]
	return f, ok
}

// Functions lists the built-in functions by category, then name.
func Functions() []FuncInfo {
	out := make([]FuncInfo, len(builtinList))
	for i, f := range builtinList {
		out[i] = f.FuncInfo
		out[i].Aliases = append([]string(nil), f.Aliases...)
	}
	order := map[string]int{"conditional": 0, "string": 1, "date/time": 2, "math": 3}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Category != out[j].Category {
			return order[out[i].Category] < order[out[j].Category]
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// unknownFunction explains a call of a function that does not exist,
// suggesting the closest known names.
func unknownFunction(name string) string {
	up := strings.ToUpper(name)
	type cand struct {
		name string
		d    int
	}
	var cands []cand
	for n := range builtinByName {
		if d := editDistance(up, n); d <= max(1, len(up)/3) || (len(up) >= 3 && strings.Contains(n, up)) {
			cands = append(cands, cand{n, d})
		}
	}
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].d != cands[j].d {
			return cands[i].d < cands[j].d
		}
		return cands[i].name < cands[j].name
	})
	msg := fmt.Sprintf("unknown function %s", name)
	if len(cands) > 0 {
		var names []string
		for i := 0; i < len(cands) && i < 3; i++ {
			names = append(names, cands[i].name)
		}
		msg += "; did you mean " + strings.Join(names, ", ") + "?"
	}
	return msg + " (docs/sql.md lists the functions)"
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// coreBuiltins are the functions bound by binder.call itself.
var coreBuiltins = []*builtin{
	{FuncInfo: FuncInfo{Name: "COALESCE", Category: "conditional", MinArgs: 1, MaxArgs: -1,
		Signature: "coalesce(expr, ...) -> common type", Doc: "The first argument that is not NULL; later arguments are evaluated only where needed."}},
	{FuncInfo: FuncInfo{Name: "NULLIF", Category: "conditional", MinArgs: 2, MaxArgs: 2,
		Signature: "nullif(a, b) -> type of a", Doc: "NULL when a = b, else a."}},
	{FuncInfo: FuncInfo{Name: "IFNULL", Aliases: []string{"NVL"}, Category: "conditional", MinArgs: 2, MaxArgs: 2,
		Signature: "ifnull(a, b) -> common type", Doc: "b when a is NULL, else a."}},
	{FuncInfo: FuncInfo{Name: "LOWER", Aliases: []string{"LCASE"}, Category: "string", MinArgs: 1, MaxArgs: 1,
		Signature: "lower(s STRING) -> STRING", Doc: "s in lower case."}},
	{FuncInfo: FuncInfo{Name: "UPPER", Aliases: []string{"UCASE"}, Category: "string", MinArgs: 1, MaxArgs: 1,
		Signature: "upper(s STRING) -> STRING", Doc: "s in upper case."}},
	{FuncInfo: FuncInfo{Name: "LENGTH", Aliases: []string{"CHAR_LENGTH", "CHARACTER_LENGTH", "LEN"}, Category: "string", MinArgs: 1, MaxArgs: 1,
		Signature: "length(s STRING | BINARY) -> INT", Doc: "The number of characters of a string, of bytes of a binary value."}},
	{FuncInfo: FuncInfo{Name: "TRIM", Category: "string", MinArgs: 1, MaxArgs: 1,
		Signature: "trim(s STRING) -> STRING", Doc: "s without leading and trailing spaces."}},
	{FuncInfo: FuncInfo{Name: "ABS", Category: "math", MinArgs: 1, MaxArgs: 1,
		Signature: "abs(x NUMERIC) -> type of x", Doc: "The absolute value; the smallest integer of its type overflows."}},
	{FuncInfo: FuncInfo{Name: "CONCAT", Category: "string", MinArgs: 1, MaxArgs: -1,
		Signature: "concat(s STRING, ...) -> STRING", Doc: "The arguments joined; NULL when any is NULL (also `a || b`)."}},
}
