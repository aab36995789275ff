package expr

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"unicode/utf8"
)

func runeLen(s string) int { return utf8.RuneCountInString(s) }

// runeSlice returns the characters [start, end) of s, clamped to s.
func runeSlice(s string, start, end int) string {
	if start < 0 {
		start = 0
	}
	if end <= start {
		return ""
	}
	i, k := 0, 0
	from := len(s)
	for i < len(s) {
		if k == start {
			from = i
			break
		}
		_, n := utf8.DecodeRuneInString(s[i:])
		i += n
		k++
	}
	if from == len(s) {
		return ""
	}
	to := from
	for to < len(s) && k < end {
		_, n := utf8.DecodeRuneInString(s[to:])
		to += n
		k++
	}
	return s[from:to]
}

// runeIndex is the character index of the first sub in s at or after
// character start, -1 when none (Spark's UTF8String.indexOf).
func runeIndex(s, sub string, start int) int {
	if sub == "" {
		return 0
	}
	i, k := 0, 0
	for i < len(s) && k < start {
		_, n := utf8.DecodeRuneInString(s[i:])
		i += n
		k++
	}
	if k < start {
		return -1
	}
	j := strings.Index(s[i:], sub)
	if j < 0 {
		return -1
	}
	return k + runeLen(s[i:i+j])
}

// sparkSubstring is Spark's substring(str, pos, len): pos is 1-based, 0
// counts as 1, a negative pos counts from the end.
func sparkSubstring(s string, pos, length int64) string {
	n := int64(runeLen(s))
	var start int64
	switch {
	case pos > 0:
		start = pos - 1
	case pos < 0:
		start = n + pos
	}
	end := start + length
	if length > 0 && end < start { // overflow
		end = math.MaxInt64
	}
	start = max(start, 0)
	if start >= end || start >= n {
		return ""
	}
	return runeSlice(s, int(start), int(min(end, n)))
}

// sparkPad is Spark's lpad/rpad.
func sparkPad(s string, length int64, pad string, left bool) string {
	n := int64(runeLen(s))
	spaces := length - n
	if spaces <= 0 || pad == "" {
		if length <= 0 {
			return ""
		}
		return runeSlice(s, 0, int(min(length, n)))
	}
	pr := []rune(pad)
	var b strings.Builder
	for k := int64(0); k < spaces; k++ {
		b.WriteRune(pr[k%int64(len(pr))])
	}
	if left {
		return b.String() + s
	}
	return s + b.String()
}

// compileRegexp compiles a Spark (Java) regular expression with Go's RE2;
// the error says why it does not compile.
func compileRegexp(pat string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(pat)
	if err != nil {
		return nil, fmt.Errorf("bad regular expression %s: %v (floe uses RE2 syntax: no lookaround or backreferences)", quoteString(pat), err)
	}
	return re, nil
}

// regexpArg binds a pattern argument: compiled once when constant, else
// per row with a small cache.
type regexpArg struct {
	fixed *regexp.Regexp
	cache map[string]*regexp.Regexp
	fn    string
}

func (b *binder) bindRegexp(e *Call, args []node, i int) (*regexpArg, node, error) {
	n, err := b.strArg(e, args, i)
	if err != nil {
		return nil, nil, err
	}
	ra := &regexpArg{fn: strings.ToLower(e.Name)}
	if c, ok := n.(*constNode); ok && c.val != nil {
		re, err := compileRegexp(c.val.(string))
		if err != nil {
			return nil, nil, &BindError{Pos: e.Args[i].Pos(), Kind: ErrInvalidArgument, Msg: fmt.Sprintf("%s: %v", ra.fn, err)}
		}
		ra.fixed = re
	}
	return ra, n, nil
}

func (r *regexpArg) get(v any) (*regexp.Regexp, error) {
	if r.fixed != nil {
		return r.fixed, nil
	}
	p := v.(string)
	if re, ok := r.cache[p]; ok {
		return re, nil
	}
	re, err := compileRegexp(p)
	if err != nil {
		return nil, &argError{msg: err.Error()}
	}
	if r.cache == nil || len(r.cache) > 64 {
		r.cache = map[string]*regexp.Regexp{}
	}
	r.cache[p] = re
	return re, nil
}

// javaReplacement converts a java.util.regex replacement ($1, ${name},
// backslash escapes) into Go's Expand template.
func javaReplacement(rep string, groups int) (string, error) {
	var b strings.Builder
	for i := 0; i < len(rep); i++ {
		c := rep[i]
		switch c {
		case '\\':
			if i+1 >= len(rep) {
				return "", invalidArg("replacement %s ends with a backslash", quoteString(rep))
			}
			i++
			if rep[i] == '$' {
				b.WriteString("$$")
			} else {
				b.WriteByte(rep[i])
			}
		case '$':
			if i+1 < len(rep) && rep[i+1] == '{' {
				end := strings.IndexByte(rep[i:], '}')
				if end < 0 {
					return "", invalidArg("replacement %s has an unterminated ${", quoteString(rep))
				}
				b.WriteString(rep[i : i+end+1])
				i += end
				continue
			}
			j := i + 1
			if j >= len(rep) || !isDigit(rep[j]) {
				return "", invalidArg("replacement %s has a $ not followed by a group number", quoteString(rep))
			}
			g := int(rep[j] - '0')
			j++
			for j < len(rep) && isDigit(rep[j]) && g*10+int(rep[j]-'0') <= groups {
				g = g*10 + int(rep[j]-'0')
				j++
			}
			if g > groups {
				return "", invalidArg("replacement %s refers to group %d but the pattern has %d", quoteString(rep), g, groups)
			}
			fmt.Fprintf(&b, "${%d}", g)
			i = j - 1
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

func rlikeBind(b *binder, e *Call, args []node) (node, error) {
	s, err := b.strArg(e, args, 0)
	if err != nil {
		return nil, err
	}
	ra, p, err := b.bindRegexp(e, args, 1)
	if err != nil {
		return nil, err
	}
	return fn(e, boolType, []node{s, p}, func(v []any) (any, error) {
		re, err := ra.get(v[1])
		if err != nil {
			return nil, err
		}
		return re.MatchString(v[0].(string)), nil
	}), nil
}

func stringBuiltins() []*builtin {
	str := func(v any) string { return v.(string) }
	i64 := func(v any) int64 { return v.(int64) }
	return []*builtin{
		def("LTRIM", nil, 1, 1, "ltrim(s STRING) -> STRING", "s without leading spaces.",
			simplePure(strType, func(v []any) any { return strings.TrimLeft(str(v[0]), " ") }, aStr)),
		def("RTRIM", nil, 1, 1, "rtrim(s STRING) -> STRING", "s without trailing spaces.",
			simplePure(strType, func(v []any) any { return strings.TrimRight(str(v[0]), " ") }, aStr)),
		def("SUBSTRING", []string{"SUBSTR"}, 2, 3, "substring(s STRING, pos INT[, len INT]) -> STRING",
			"The len characters of s from pos (1-based; 0 counts as 1, negative counts from the end); all the rest without len.",
			simplePure(strType, func(v []any) any {
				length := int64(math.MaxInt32)
				if len(v) > 2 {
					length = i64(v[2])
				}
				return sparkSubstring(str(v[0]), i64(v[1]), length)
			}, aStr, aInt, aInt)),
		def("LEFT", nil, 2, 2, "left(s STRING, n INT) -> STRING", "The first n characters of s ('' when n <= 0).",
			simplePure(strType, func(v []any) any {
				n := i64(v[1])
				if n <= 0 {
					return ""
				}
				return sparkSubstring(str(v[0]), 1, n)
			}, aStr, aInt)),
		def("RIGHT", nil, 2, 2, "right(s STRING, n INT) -> STRING", "The last n characters of s ('' when n <= 0).",
			simplePure(strType, func(v []any) any {
				s, n := str(v[0]), i64(v[1])
				if n <= 0 {
					return ""
				}
				l := int64(runeLen(s))
				return runeSlice(s, int(max(l-n, 0)), int(l))
			}, aStr, aInt)),
		def("CONCAT_WS", nil, 1, -1, "concat_ws(sep STRING, s STRING, ...) -> STRING",
			"The strings s joined by sep, skipping NULLs; NULL only when sep is NULL.",
			func(b *binder, e *Call, args []node) (node, error) {
				out, err := b.convertArgs(e, args, aStr)
				if err != nil {
					return nil, err
				}
				r := pureFn(e, strType, out, func(v []any) any {
					if v[0] == nil {
						return nil
					}
					var parts []string
					for _, x := range v[1:] {
						if x != nil {
							parts = append(parts, x.(string))
						}
					}
					return strings.Join(parts, v[0].(string))
				})
				r.lenient = true
				return r, nil
			}),
		def("REPLACE", nil, 2, 3, "replace(s STRING, search STRING[, rep STRING]) -> STRING",
			"s with every search replaced by rep ('' by default); s itself when search is ''.",
			simplePure(strType, func(v []any) any {
				rep := ""
				if len(v) > 2 {
					rep = str(v[2])
				}
				if str(v[1]) == "" {
					return str(v[0])
				}
				return strings.ReplaceAll(str(v[0]), str(v[1]), rep)
			}, aStr)),
		def("LPAD", nil, 2, 3, "lpad(s STRING, len INT[, pad STRING]) -> STRING",
			"s left-padded with pad (' ' by default) to len characters, or cut to len.",
			padBind(true)),
		def("RPAD", nil, 2, 3, "rpad(s STRING, len INT[, pad STRING]) -> STRING",
			"s right-padded with pad (' ' by default) to len characters, or cut to len.",
			padBind(false)),
		def("INSTR", nil, 2, 2, "instr(s STRING, sub STRING) -> INT",
			"The 1-based position of the first sub in s, 0 when none.",
			simplePure(i32Type, func(v []any) any { return int64(runeIndex(str(v[0]), str(v[1]), 0) + 1) }, aStr)),
		def("LOCATE", []string{"POSITION"}, 2, 3, "locate(sub STRING, s STRING[, pos INT]) -> INT",
			"The 1-based position of the first sub in s at or after pos (1 by default); 0 when none or pos < 1 or NULL.",
			func(b *binder, e *Call, args []node) (node, error) {
				out, err := b.convertArgs(e, args, aStr, aStr, aInt)
				if err != nil {
					return nil, err
				}
				r := pureFn(e, i32Type, out, func(v []any) any {
					pos := int64(1)
					if len(v) > 2 {
						if v[2] == nil {
							return int64(0)
						}
						pos = i64(v[2])
					}
					if v[0] == nil || v[1] == nil {
						return nil
					}
					if pos < 1 {
						return int64(0)
					}
					if pos-1 > math.MaxInt32 {
						return int64(0)
					}
					return int64(runeIndex(str(v[1]), str(v[0]), int(pos-1)) + 1)
				})
				r.lenient = true
				return r, nil
			}),
		def("STARTSWITH", []string{"STARTS_WITH"}, 2, 2, "startswith(s STRING, prefix STRING) -> BOOLEAN", "Whether s begins with prefix.",
			simplePure(boolType, func(v []any) any { return strings.HasPrefix(str(v[0]), str(v[1])) }, aStr)),
		def("ENDSWITH", []string{"ENDS_WITH"}, 2, 2, "endswith(s STRING, suffix STRING) -> BOOLEAN", "Whether s ends with suffix.",
			simplePure(boolType, func(v []any) any { return strings.HasSuffix(str(v[0]), str(v[1])) }, aStr)),
		def("CONTAINS", nil, 2, 2, "contains(s STRING, sub STRING) -> BOOLEAN", "Whether sub occurs in s.",
			simplePure(boolType, func(v []any) any { return strings.Contains(str(v[0]), str(v[1])) }, aStr)),
		def("RLIKE", []string{"REGEXP", "REGEXP_LIKE"}, 2, 2, "rlike(s STRING, regexp STRING) -> BOOLEAN",
			"Whether regexp matches somewhere in s (also `s RLIKE regexp`, `s REGEXP regexp`); RE2 syntax.",
			rlikeBind),
		def("REGEXP_REPLACE", nil, 3, 4, "regexp_replace(s STRING, regexp STRING, rep STRING[, pos INT]) -> STRING",
			"s with every match of regexp from character pos (1 by default) on replaced by rep ($1 for a group).",
			func(b *binder, e *Call, args []node) (node, error) {
				s, err := b.strArg(e, args, 0)
				if err != nil {
					return nil, err
				}
				ra, p, err := b.bindRegexp(e, args, 1)
				if err != nil {
					return nil, err
				}
				out, err := b.convertArgs(e, args, aStr, aStr, aStr, aInt)
				if err != nil {
					return nil, err
				}
				out[0], out[1] = s, p
				return fn(e, strType, out, func(v []any) (any, error) {
					re, err := ra.get(v[1])
					if err != nil {
						return nil, err
					}
					tmpl, err := javaReplacement(str(v[2]), re.NumSubexp())
					if err != nil {
						return nil, err
					}
					src := str(v[0])
					pos := int64(1)
					if len(v) > 3 {
						pos = i64(v[3])
						if pos < 1 {
							return nil, invalidArg("position %d is not positive", pos)
						}
					}
					if pos-1 >= int64(runeLen(src)) {
						return src, nil
					}
					head := runeSlice(src, 0, int(pos-1))
					tail := src[len(head):]
					var out []byte
					last := 0
					for _, m := range re.FindAllStringSubmatchIndex(tail, -1) {
						out = append(out, tail[last:m[0]]...)
						out = re.ExpandString(out, tmpl, tail, m)
						last = m[1]
					}
					out = append(out, tail[last:]...)
					return head + string(out), nil
				}), nil
			}),
		def("REGEXP_EXTRACT", nil, 2, 3, "regexp_extract(s STRING, regexp STRING[, idx INT]) -> STRING",
			"Group idx (1 by default, 0 = the whole match) of the first match of regexp in s; '' when none.",
			func(b *binder, e *Call, args []node) (node, error) {
				s, err := b.strArg(e, args, 0)
				if err != nil {
					return nil, err
				}
				ra, p, err := b.bindRegexp(e, args, 1)
				if err != nil {
					return nil, err
				}
				out := []node{s, p}
				if len(args) > 2 {
					idx, err := b.intArg(e, args, 2)
					if err != nil {
						return nil, err
					}
					out = append(out, idx)
				}
				return fn(e, strType, out, func(v []any) (any, error) {
					re, err := ra.get(v[1])
					if err != nil {
						return nil, err
					}
					idx := int64(1)
					if len(v) > 2 {
						idx = i64(v[2])
					}
					if idx < 0 || idx > int64(re.NumSubexp()) {
						return nil, invalidArg("the pattern has %d group(s) but group %d was asked for", re.NumSubexp(), idx)
					}
					m := re.FindStringSubmatchIndex(str(v[0]))
					if m == nil || m[2*idx] < 0 {
						return "", nil
					}
					return str(v[0])[m[2*idx]:m[2*idx+1]], nil
				}), nil
			}),
		def("SPLIT_PART", nil, 3, 3, "split_part(s STRING, delim STRING, n INT) -> STRING",
			"Field n of s split at delim (1-based, negative counts from the end); '' when out of range; n = 0 is an error.",
			simple(strType, func(v []any) (any, error) {
				n := i64(v[2])
				if n == 0 {
					return nil, invalidArg("field number 0: fields are numbered from 1 (or from -1 at the end)")
				}
				parts := []string{str(v[0])}
				if d := str(v[1]); d != "" {
					parts = strings.Split(str(v[0]), d)
				}
				k := n - 1
				if n < 0 {
					k = int64(len(parts)) + n
				}
				if k < 0 || k >= int64(len(parts)) {
					return "", nil
				}
				return parts[k], nil
			}, aStr, aStr, aInt)),
		def("REVERSE", nil, 1, 1, "reverse(s STRING) -> STRING", "The characters of s in reverse order.",
			simplePure(strType, func(v []any) any {
				r := []rune(str(v[0]))
				for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
					r[i], r[j] = r[j], r[i]
				}
				return string(r)
			}, aStr)),
		def("REPEAT", nil, 2, 2, "repeat(s STRING, n INT) -> STRING", "s repeated n times ('' when n <= 0).",
			simple(strType, func(v []any) (any, error) {
				n := i64(v[1])
				if n <= 0 {
					return "", nil
				}
				if s := str(v[0]); int64(len(s))*n > 1<<28 {
					return nil, invalidArg("the result would be %d bytes long", int64(len(s))*n)
				}
				return strings.Repeat(str(v[0]), int(n)), nil
			}, aStr, aInt)),
		def("INITCAP", nil, 1, 1, "initcap(s STRING) -> STRING", "s with the first letter of each space-separated word in upper case, the others in lower case.",
			simplePure(strType, func(v []any) any {
				r := []rune(strings.ToLower(str(v[0])))
				for i := range r {
					if i == 0 || r[i-1] == ' ' {
						r[i] = []rune(strings.ToUpper(string(r[i])))[0]
					}
				}
				return string(r)
			}, aStr)),
	}
}

func padBind(left bool) func(*binder, *Call, []node) (node, error) {
	return simplePure(strType, func(v []any) any {
		pad := " "
		if len(v) > 2 {
			pad = v[2].(string)
		}
		return sparkPad(v[0].(string), v[1].(int64), pad, left)
	}, aStr, aInt, aStr)
}
