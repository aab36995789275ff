package ddl

import (
	"fmt"
	"strings"

	"github.com/apache/iceberg-go"
)

// ParsePartitionSpec parses a comma-separated partition list against sc:
// bare column names (identity), identity(col), year(col)/years(col),
// month(col)/months(col), day(col)/days(col), hour(col)/hours(col),
// bucket(N, col), truncate(W, col) (also written bucket[N](col), as Iceberg
// prints transforms) and void(col), each optionally followed by "AS name".
// Partition field names otherwise follow Iceberg's defaults (col, ts_day,
// id_bucket_16, ...). An empty string is the unpartitioned spec.
func ParsePartitionSpec(src string, sc *iceberg.Schema) (iceberg.PartitionSpec, error) {
	if strings.TrimSpace(src) == "" {
		return *iceberg.UnpartitionedSpec, nil
	}
	fields, err := ParsePartitionFields(src, sc)
	if err != nil {
		return iceberg.PartitionSpec{}, err
	}
	opts := make([]iceberg.PartitionOption, 0, len(fields))
	for i, f := range fields {
		id := 1000 + i
		opts = append(opts, iceberg.AddPartitionFieldBySourceID(f.SourceID, f.Name, f.Transform, sc, &id))
	}
	spec, err := iceberg.NewPartitionSpecOpts(opts...)
	if err != nil {
		return iceberg.PartitionSpec{}, fmt.Errorf("partition spec %q: %w", src, err)
	}
	return spec, nil
}

// PartitionField is one parsed partition field before IDs are assigned.
type PartitionField struct {
	SourceID   int
	SourceName string
	Name       string
	Transform  iceberg.Transform
}

// ParsePartitionFields parses a partition list into fields (see
// ParsePartitionSpec), checking each transform against its source type.
func ParsePartitionFields(src string, sc *iceberg.Schema) ([]PartitionField, error) {
	if err := checkLength(src); err != nil {
		return nil, err
	}
	l := &lexer{src: src}
	var out []PartitionField
	names := map[string]bool{}
	for {
		pos := l.pos
		word, err := l.ident()
		if err != nil {
			return nil, err
		}
		var (
			col string
			tr  iceberg.Transform
			arg int
		)
		// bucket[16](id) and truncate[4](s), as Iceberg's transform names
		// print, are bucket(16, id) and truncate(4, s).
		bracketArg := -1
		if fn := strings.ToLower(word); (fn == "bucket" || fn == "truncate") && l.accept('[') {
			if bracketArg, err = l.number(); err != nil {
				return nil, err
			}
			if err := l.expect(']'); err != nil {
				return nil, err
			}
			if l.peekByte() != '(' {
				return nil, l.errf("expected ( after %s[%d]", fn, bracketArg)
			}
		}
		if l.accept('(') {
			fn := strings.ToLower(word)
			switch fn {
			case "bucket", "truncate":
				// bucket(16, id) as in Spark; bucket(id, 16) is accepted too.
				if bracketArg >= 0 {
					arg = bracketArg
					if col, err = l.ident(); err != nil {
						return nil, err
					}
				} else if c := l.peekByte(); c >= '0' && c <= '9' {
					if arg, err = l.number(); err != nil {
						return nil, err
					}
					if err := l.expect(','); err != nil {
						return nil, err
					}
					if col, err = l.ident(); err != nil {
						return nil, err
					}
				} else {
					if col, err = l.ident(); err != nil {
						return nil, err
					}
					if err := l.expect(','); err != nil {
						return nil, err
					}
					if arg, err = l.number(); err != nil {
						return nil, err
					}
				}
				if arg <= 0 {
					l.pos = pos
					return nil, l.errf("%s width must be positive", fn)
				}
				if fn == "bucket" {
					tr = iceberg.BucketTransform{NumBuckets: arg}
				} else {
					tr = iceberg.TruncateTransform{Width: arg}
				}
			case "identity":
				col, err = l.ident()
				tr = iceberg.IdentityTransform{}
			case "year", "years":
				col, err = l.ident()
				tr = iceberg.YearTransform{}
			case "month", "months":
				col, err = l.ident()
				tr = iceberg.MonthTransform{}
			case "day", "days", "date":
				col, err = l.ident()
				tr = iceberg.DayTransform{}
			case "hour", "hours", "date_hour":
				col, err = l.ident()
				tr = iceberg.HourTransform{}
			case "void":
				col, err = l.ident()
				tr = iceberg.VoidTransform{}
			default:
				l.pos = pos
				return nil, l.errf("unknown partition transform %q (want identity, year, month, day, hour, bucket, truncate or void)", word)
			}
			if err != nil {
				return nil, err
			}
			if err := l.expect(')'); err != nil {
				return nil, err
			}
		} else {
			col, tr = word, iceberg.IdentityTransform{}
		}
		f, ok := sc.FindFieldByName(col)
		if !ok {
			l.pos = pos
			return nil, l.errf("partition source column %q is not in the schema (columns: %s)", col, columnNames(sc))
		}
		if !tr.CanTransform(f.Type) {
			l.pos = pos
			return nil, l.errf("transform %s cannot apply to column %q of type %s", tr, col, f.Type)
		}
		name := defaultPartitionName(f.Name, tr)
		if l.keyword("as") {
			// A field name of one's own, as `describe` prints it.
			if name, err = l.ident(); err != nil {
				return nil, err
			}
		}
		if names[name] {
			l.pos = pos
			return nil, l.errf("partition field %q appears twice", name)
		}
		names[name] = true
		out = append(out, PartitionField{SourceID: f.ID, SourceName: f.Name, Name: name, Transform: tr})
		if l.accept(',') {
			continue
		}
		if !l.eof() {
			return nil, l.errf("expected ',' or end of partition list")
		}
		return out, nil
	}
}

func defaultPartitionName(col string, tr iceberg.Transform) string {
	switch t := tr.(type) {
	case iceberg.IdentityTransform:
		return col
	case iceberg.BucketTransform:
		return fmt.Sprintf("%s_bucket_%d", col, t.NumBuckets)
	case iceberg.TruncateTransform:
		return fmt.Sprintf("%s_trunc_%d", col, t.Width)
	case iceberg.YearTransform:
		return col + "_year"
	case iceberg.MonthTransform:
		return col + "_month"
	case iceberg.DayTransform:
		return col + "_day"
	case iceberg.HourTransform:
		return col + "_hour"
	case iceberg.VoidTransform:
		return col + "_null"
	}
	return col + "_" + tr.String()
}
