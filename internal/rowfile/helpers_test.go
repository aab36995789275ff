package rowfile

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/extensions"
)

// parseTestType parses the Iceberg-like type names used in test scripts:
// boolean, int, long, float, double, decimal(p,s), date, time, timestamp,
// timestamptz, timestamp_ns, timestamptz_ns, string, binary, uuid, fixed[n],
// list<T>, map<K,V>, struct<a: T, b: T not null>, and the Arrow-only
// large_string, large_binary, large_list<T>, tinyint, smallint.
func parseTestType(s string) (arrow.DataType, error) {
	p := &typeParser{s: s}
	t, err := p.typ()
	if err != nil {
		return nil, err
	}
	p.ws()
	if p.i != len(p.s) {
		return nil, fmt.Errorf("type %q: trailing %q", s, p.s[p.i:])
	}
	return t, nil
}

type typeParser struct {
	s  string
	i  int
	id int
}

func (p *typeParser) ws() {
	for p.i < len(p.s) && p.s[p.i] == ' ' {
		p.i++
	}
}

func (p *typeParser) word() string {
	p.ws()
	j := p.i
	for p.i < len(p.s) && (p.s[p.i] == '_' || p.s[p.i] >= 'a' && p.s[p.i] <= 'z' || p.s[p.i] >= 'A' && p.s[p.i] <= 'Z' || p.s[p.i] >= '0' && p.s[p.i] <= '9') {
		p.i++
	}
	return p.s[j:p.i]
}

func (p *typeParser) expect(c byte) error {
	p.ws()
	if p.i >= len(p.s) || p.s[p.i] != c {
		return fmt.Errorf("type %q: expected %q at %d", p.s, c, p.i)
	}
	p.i++
	return nil
}

func (p *typeParser) peek(c byte) bool {
	p.ws()
	return p.i < len(p.s) && p.s[p.i] == c
}

func (p *typeParser) num() int {
	n, _ := strconv.Atoi(p.word())
	return n
}

func (p *typeParser) notNull() bool {
	p.ws()
	if strings.HasPrefix(p.s[p.i:], "not null") {
		p.i += len("not null")
		return true
	}
	return false
}

func (p *typeParser) field(name string, t arrow.DataType, nullable bool) arrow.Field {
	p.id++
	return arrow.Field{Name: name, Type: t, Nullable: nullable,
		Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{strconv.Itoa(1000 + p.id)})}
}

func (p *typeParser) typ() (arrow.DataType, error) {
	w := p.word()
	switch w {
	case "boolean":
		return arrow.FixedWidthTypes.Boolean, nil
	case "tinyint":
		return arrow.PrimitiveTypes.Int8, nil
	case "smallint":
		return arrow.PrimitiveTypes.Int16, nil
	case "int":
		return arrow.PrimitiveTypes.Int32, nil
	case "long":
		return arrow.PrimitiveTypes.Int64, nil
	case "float":
		return arrow.PrimitiveTypes.Float32, nil
	case "double":
		return arrow.PrimitiveTypes.Float64, nil
	case "date":
		return arrow.FixedWidthTypes.Date32, nil
	case "time":
		return arrow.FixedWidthTypes.Time64us, nil
	case "timestamp":
		return &arrow.TimestampType{Unit: arrow.Microsecond}, nil
	case "timestamptz":
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, nil
	case "timestamp_ms":
		return &arrow.TimestampType{Unit: arrow.Millisecond}, nil
	case "timestamptz_ms":
		return &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, nil
	case "timestamptz_ny":
		return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "America/New_York"}, nil
	case "time_ns":
		return arrow.FixedWidthTypes.Time64ns, nil
	case "time_ms":
		return arrow.FixedWidthTypes.Time32ms, nil
	case "date64":
		return arrow.FixedWidthTypes.Date64, nil
	case "timestamp_ns":
		return &arrow.TimestampType{Unit: arrow.Nanosecond}, nil
	case "timestamptz_ns":
		return &arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"}, nil
	case "string":
		return arrow.BinaryTypes.String, nil
	case "large_string":
		return arrow.BinaryTypes.LargeString, nil
	case "binary":
		return arrow.BinaryTypes.Binary, nil
	case "large_binary":
		return arrow.BinaryTypes.LargeBinary, nil
	case "uuid":
		return extensions.NewUUIDType(), nil
	case "unknown":
		return arrow.Null, nil
	case "decimal":
		if err := p.expect('('); err != nil {
			return nil, err
		}
		prec := p.num()
		if err := p.expect(','); err != nil {
			return nil, err
		}
		scale := p.num()
		if err := p.expect(')'); err != nil {
			return nil, err
		}
		return &arrow.Decimal128Type{Precision: int32(prec), Scale: int32(scale)}, nil
	case "fixed":
		if err := p.expect('['); err != nil {
			return nil, err
		}
		n := p.num()
		if err := p.expect(']'); err != nil {
			return nil, err
		}
		return &arrow.FixedSizeBinaryType{ByteWidth: n}, nil
	case "list", "large_list":
		if err := p.expect('<'); err != nil {
			return nil, err
		}
		et, err := p.typ()
		if err != nil {
			return nil, err
		}
		nn := p.notNull()
		if err := p.expect('>'); err != nil {
			return nil, err
		}
		ef := p.field("element", et, !nn)
		if w == "large_list" {
			return arrow.LargeListOfField(ef), nil
		}
		return arrow.ListOfField(ef), nil
	case "map":
		if err := p.expect('<'); err != nil {
			return nil, err
		}
		kt, err := p.typ()
		if err != nil {
			return nil, err
		}
		if err := p.expect(','); err != nil {
			return nil, err
		}
		vt, err := p.typ()
		if err != nil {
			return nil, err
		}
		nn := p.notNull()
		if err := p.expect('>'); err != nil {
			return nil, err
		}
		return arrow.MapOfFields(p.field("key", kt, false), p.field("value", vt, !nn)), nil
	case "struct":
		if err := p.expect('<'); err != nil {
			return nil, err
		}
		var fields []arrow.Field
		for !p.peek('>') {
			name := p.word()
			if err := p.expect(':'); err != nil {
				return nil, err
			}
			t, err := p.typ()
			if err != nil {
				return nil, err
			}
			fields = append(fields, p.field(name, t, !p.notNull()))
			if p.peek(',') {
				p.i++
			}
		}
		p.i++
		return arrow.StructOf(fields...), nil
	}
	return nil, fmt.Errorf("type %q: unknown type %q", p.s, w)
}

// parseTestFields parses lines "name type [not null]".
func parseTestFields(input string) ([]arrow.Field, error) {
	var fields []arrow.Field
	for i, line := range strings.Split(strings.TrimSpace(input), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		name, rest, _ := strings.Cut(line, " ")
		nullable := true
		if r, ok := strings.CutSuffix(rest, " not null"); ok {
			rest, nullable = r, false
		}
		t, err := parseTestType(rest)
		if err != nil {
			return nil, err
		}
		fields = append(fields, arrow.Field{Name: name, Type: t, Nullable: nullable,
			Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{strconv.Itoa(i + 1)})})
	}
	return fields, nil
}

func mustSchema(t testing.TB, input string) *arrow.Schema {
	t.Helper()
	fields, err := parseTestFields(input)
	if err != nil {
		t.Fatal(err)
	}
	return arrow.NewSchema(fields, nil)
}

// sentinelName names the sentinel errors err wraps, for test output.
func sentinelName(err error) string {
	var names []string
	for _, s := range []struct {
		name string
		err  error
	}{
		{"ErrFormat", ErrFormat}, {"ErrOptions", ErrOptions}, {"ErrUnknownColumn", ErrUnknownColumn},
		{"ErrMissingColumn", ErrMissingColumn}, {"ErrDuplicateColumn", ErrDuplicateColumn},
		{"ErrIncompatibleType", ErrIncompatibleType}, {"ErrUnsupportedType", ErrUnsupportedType},
		{"ErrMalformed", ErrMalformed}, {"ErrValue", ErrValue}, {"ErrSchema", ErrSchema}, {"ErrWriterClosed", ErrWriterClosed},
	} {
		if errors.Is(err, s.err) {
			names = append(names, s.name)
		}
	}
	if len(names) == 0 {
		return "(no sentinel)"
	}
	return strings.Join(names, ",")
}

// readAllAs reads everything and renders it in an output format, or the
// error with its sentinel.
func readAllAs(t testing.TB, data []byte, name string, opts ReadOptions, out OutputFormat, wopts ...WriterOption) string {
	t.Helper()
	r, err := NewReader(context.Background(), bytes.NewReader(data), name, opts)
	if err != nil {
		return fmt.Sprintf("error [%s]: %v\n", sentinelName(err), err)
	}
	defer r.Close()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, out, r.Schema(), wopts...)
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		if err := w.Write(r.RecordBatch()); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := r.Err(); err != nil {
		return fmt.Sprintf("%serror [%s]: %v\n", buf.String(), sentinelName(err), err)
	}
	return buf.String()
}

// writeParquetFromJSONL converts JSON Lines rows to a Parquet file with the
// given schema (through this package's own reader and writer).
func writeParquetFromJSONL(t testing.TB, schema *arrow.Schema, rows string) []byte {
	t.Helper()
	r, err := NewReader(context.Background(), strings.NewReader(rows), "src.jsonl", ReadOptions{Target: schema, BatchSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, OutputParquet, schema, WithRowGroupRows(3))
	if err != nil {
		t.Fatal(err)
	}
	for r.Next() {
		if err := w.Write(r.RecordBatch()); err != nil {
			t.Fatal(err)
		}
	}
	if r.Err() != nil {
		t.Fatal(r.Err())
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
