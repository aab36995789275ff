package expr

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/cockroachdb/datadriven"
)

// TestDataDriven runs the scripts in testdata/. Commands:
//
//	schema          one "name: type" per line (see parseTestType)
//	rows            one JSON object per line; replaces the current batch
//	parse           the input parsed and printed back, or the error with a caret
//	eval            the type of the result and one value per row
//	                (qualifier=alias: WithQualifier; type=t: WithResultType)
//	mask            the Mask of a predicate
//	filter          the rows Filter keeps
//	assign          ParseAssignments printed back
//	merge           ParseMerge printed back, one clause per line
//	iceberg         ToIceberg against the schema converted to Iceberg
//
// Regenerate expected output with: go test ./expr/ -run TestDataDriven -rewrite
func TestDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		if strings.Contains(filepath.ToSlash(path), "/fuzz/") {
			return // fuzz corpora (fuzz_test.go)
		}
		mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
		defer mem.AssertSize(t, 0)
		s := &ddState{mem: mem}
		defer s.release()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return s.run(t, d)
		})
	})
}

type ddState struct {
	mem    *memory.CheckedAllocator
	schema *arrow.Schema
	rec    arrow.RecordBatch
}

func (s *ddState) release() {
	if s.rec != nil {
		s.rec.Release()
		s.rec = nil
	}
}

func (s *ddState) run(t *testing.T, d *datadriven.TestData) string {
	src := strings.TrimSpace(d.Input)
	ctx := context.Background()
	switch d.Cmd {
	case "schema":
		var fields []arrow.Field
		for _, line := range strings.Split(src, "\n") {
			name, typ, ok := strings.Cut(line, ":")
			if !ok {
				d.Fatalf(t, "bad schema line %q", line)
			}
			dt, err := parseTestType(strings.TrimSpace(typ))
			if err != nil {
				d.Fatalf(t, "%v", err)
			}
			fields = append(fields, arrow.Field{Name: strings.TrimSpace(name), Type: dt, Nullable: true})
		}
		s.schema = arrow.NewSchema(fields, nil)
		s.release()
		rec, _, err := array.RecordFromJSON(s.mem, s.schema, strings.NewReader("[]"))
		if err != nil {
			d.Fatalf(t, "%v", err)
		}
		s.rec = rec
		return ""
	case "rows":
		s.release()
		rec, _, err := array.RecordFromJSON(s.mem, s.schema, strings.NewReader("["+strings.Join(strings.Split(src, "\n"), ",")+"]"))
		if err != nil {
			d.Fatalf(t, "rows: %v", err)
		}
		s.rec = rec
		return ""
	case "parse":
		e, err := Parse(src)
		if err != nil {
			return "error: " + FormatError(src, err) + "\n"
		}
		return e.String() + "\n"
	case "assign":
		as, err := ParseAssignments(src)
		if err != nil {
			return "error: " + FormatError(src, err) + "\n"
		}
		var b strings.Builder
		for _, a := range as {
			fmt.Fprintf(&b, "%s\n", a)
		}
		return b.String()
	case "merge":
		m, err := ParseMerge(src)
		if err != nil {
			return "error: " + FormatError(src, err) + "\n"
		}
		return renderMerge(m)
	case "eval", "mask", "filter":
		e, err := Parse(src)
		if err != nil {
			return "error: " + FormatError(src, err) + "\n"
		}
		var opts []Option
		opts = append(opts, WithAllocator(s.mem))
		for _, arg := range d.CmdArgs {
			switch arg.Key {
			case "qualifier":
				opts = append(opts, WithQualifier(arg.Vals[0]))
			case "type":
				dt, err := parseTestType(strings.Join(arg.Vals, ","))
				if err != nil {
					d.Fatalf(t, "%v", err)
				}
				opts = append(opts, WithResultType(dt))
			}
		}
		p, err := Compile(e, s.schema, opts...)
		if err != nil {
			return "error: " + FormatError(src, err) + "\n"
		}
		switch d.Cmd {
		case "eval":
			res, err := p.Eval(ctx, s.rec)
			if err != nil {
				return "error: " + FormatError(src, err) + "\n"
			}
			defer res.Release()
			var b strings.Builder
			b.WriteString(typeName(p.Type()) + "\n")
			for i := 0; i < res.Len(); i++ {
				b.WriteString(renderCell(res, i) + "\n")
			}
			return b.String()
		case "mask":
			res, err := p.Mask(ctx, s.rec)
			if err != nil {
				return "error: " + FormatError(src, err) + "\n"
			}
			defer res.Release()
			var b strings.Builder
			for i := 0; i < res.Len(); i++ {
				fmt.Fprintf(&b, "%v\n", res.Value(i))
			}
			return b.String()
		default:
			res, err := p.Filter(ctx, s.rec)
			if err != nil {
				return "error: " + FormatError(src, err) + "\n"
			}
			defer res.Release()
			return renderRows(res)
		}
	case "iceberg":
		return runIceberg(t, d, s.schema, src)
	}
	d.Fatalf(t, "unknown command %s", d.Cmd)
	return ""
}

func renderMerge(m *Merge) string {
	var b strings.Builder
	fmt.Fprintf(&b, "target: %s", quoteName(m.Target))
	if m.TargetAlias != "" {
		fmt.Fprintf(&b, " AS %s", m.TargetAlias)
	}
	if m.Source.Query != nil {
		fmt.Fprintf(&b, "\nsource: query %s", m.Source.Query)
	} else if m.Source.Table != nil {
		fmt.Fprintf(&b, "\nsource: table %s", quoteName(m.Source.Table))
	} else {
		fmt.Fprintf(&b, "\nsource: path %q", m.Source.Path)
	}
	if m.SourceAlias != "" {
		fmt.Fprintf(&b, " AS %s", m.SourceAlias)
	}
	fmt.Fprintf(&b, "\non: %s\n", m.On)
	for _, c := range m.Clauses {
		fmt.Fprintf(&b, "%s\n", c)
	}
	return b.String()
}

// renderCell prints one value: strings quoted, NULL bare.
func renderCell(a arrow.Array, i int) string {
	if a.IsNull(i) {
		return "NULL"
	}
	switch familyOf(a.DataType()) {
	case famStruct:
		st := a.(*array.Struct)
		parts := make([]string, st.NumField())
		for k := range parts {
			parts[k] = renderCell(st.Field(k), i)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case famOther:
		return a.ValueStr(i)
	}
	v := getter(a)(i)
	s := formatValue(v, a.DataType())
	switch familyOf(a.DataType()) {
	case famString:
		return quoteString(s)
	case famBinary:
		return "X'" + fmt.Sprintf("%X", v.([]byte)) + "'"
	}
	return s
}

func renderRows(rec arrow.RecordBatch) string {
	var b strings.Builder
	for i := 0; i < int(rec.NumRows()); i++ {
		cells := make([]string, rec.NumCols())
		for c := range cells {
			cells[c] = renderCell(rec.Column(c), i)
		}
		b.WriteString(strings.Join(cells, ", ") + "\n")
	}
	if rec.NumRows() == 0 {
		b.WriteString("(no rows)\n")
	}
	return b.String()
}

// parseTestType parses the type names of test schemas: bool, int8..int64,
// float32, float64, decimal(p,s), string, large_string, binary,
// large_binary, fixed(n), date, time_us, timestamp_us, timestamptz_us,
// timestamp_ns, timestamptz_ns, list<t>, struct<name t, ...>.
func parseTestType(s string) (arrow.DataType, error) {
	switch s {
	case "bool":
		return arrow.FixedWidthTypes.Boolean, nil
	case "int8":
		return arrow.PrimitiveTypes.Int8, nil
	case "int16":
		return arrow.PrimitiveTypes.Int16, nil
	case "int32":
		return arrow.PrimitiveTypes.Int32, nil
	case "int64":
		return arrow.PrimitiveTypes.Int64, nil
	case "float32":
		return arrow.PrimitiveTypes.Float32, nil
	case "float64":
		return arrow.PrimitiveTypes.Float64, nil
	case "string":
		return arrow.BinaryTypes.String, nil
	case "large_string":
		return arrow.BinaryTypes.LargeString, nil
	case "binary":
		return arrow.BinaryTypes.Binary, nil
	case "large_binary":
		return arrow.BinaryTypes.LargeBinary, nil
	case "date":
		return arrow.FixedWidthTypes.Date32, nil
	case "time_us":
		return arrow.FixedWidthTypes.Time64us, nil
	case "timestamp_us":
		return &arrow.TimestampType{Unit: arrow.Microsecond}, nil
	case "timestamptz_us":
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, nil
	case "timestamp_ns":
		return &arrow.TimestampType{Unit: arrow.Nanosecond}, nil
	case "timestamptz_ns":
		return &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}, nil
	}
	switch {
	case strings.HasPrefix(s, "decimal(") && strings.HasSuffix(s, ")"):
		p, sc, _ := strings.Cut(s[8:len(s)-1], ",")
		pi, err1 := strconv.Atoi(strings.TrimSpace(p))
		si, err2 := strconv.Atoi(strings.TrimSpace(sc))
		if err := errors.Join(err1, err2); err != nil {
			return nil, err
		}
		return decType(int32(pi), int32(si)), nil
	case strings.HasPrefix(s, "fixed(") && strings.HasSuffix(s, ")"):
		n, err := strconv.Atoi(s[6 : len(s)-1])
		if err != nil {
			return nil, err
		}
		return &arrow.FixedSizeBinaryType{ByteWidth: n}, nil
	case strings.HasPrefix(s, "list<") && strings.HasSuffix(s, ">"):
		el, err := parseTestType(s[5 : len(s)-1])
		if err != nil {
			return nil, err
		}
		return arrow.ListOf(el), nil
	case strings.HasPrefix(s, "struct<") && strings.HasSuffix(s, ">"):
		var fields []arrow.Field
		for _, part := range splitTop(s[7 : len(s)-1]) {
			name, typ, ok := strings.Cut(strings.TrimSpace(part), " ")
			if !ok {
				return nil, fmt.Errorf("bad struct field %q", part)
			}
			dt, err := parseTestType(strings.TrimSpace(typ))
			if err != nil {
				return nil, err
			}
			fields = append(fields, arrow.Field{Name: name, Type: dt, Nullable: true})
		}
		return arrow.StructOf(fields...), nil
	}
	return nil, fmt.Errorf("unknown test type %q", s)
}

// splitTop splits on commas outside <> and ().
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '<', '(':
			depth++
		case '>', ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}
