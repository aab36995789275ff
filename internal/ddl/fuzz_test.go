package ddl_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/floedata/floe/internal/ddl"
)

// The fuzz targets of this file feed arbitrary text to the --schema and
// --partition-by parsers. Each asserts that nothing panics, that every
// error wraps ErrSyntax (or says which column is wrong), and that a schema
// that parses prints back (FormatSchema below) to text that parses to the
// same schema. Run one with
//
//	go test ./internal/ddl -run '^$' -fuzz '^FuzzParseSchema$' -fuzztime 1m

var schemaSeeds = []string{
	"id long not null, data string, price decimal(10,2), ts timestamptz, tags list<string>",
	"attrs map<string, int>, loc struct<lat: double, lon: double not null> comment 'where'",
	"`odd ``name``` fixed[16] required, u uuid, b binary, t time, d date, x timestamp_ns, y timestamptz_ns",
	"l list<list<map<string, struct<a: int>>> not null>, f float, g double, bool boolean optional",
	"a int null, B bigint", "é string", "a decimal(38,38)", "a fixed(0)", "",
}

// formatSchema renders the top-level columns of sc as a column list.
func formatSchema(sc *iceberg.Schema) string {
	parts := make([]string, 0, len(sc.Fields()))
	for _, f := range sc.Fields() {
		s := "`" + strings.ReplaceAll(f.Name, "`", "``") + "` " + ddl.FormatType(f.Type)
		if f.Required {
			s += " not null"
		}
		if f.Doc != "" {
			s += " comment '" + strings.ReplaceAll(f.Doc, "'", "''") + "'"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

func FuzzParseSchema(f *testing.F) {
	for _, s := range schemaSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		sc, err := ddl.ParseSchema(src, nil)
		if err != nil {
			if !errors.Is(err, ddl.ErrSyntax) && !strings.Contains(err.Error(), "column") {
				t.Fatalf("%q: error wraps no sentinel: %v", src, err)
			}
			return
		}
		printed := formatSchema(sc)
		back, err := ddl.ParseSchema(printed, nil)
		if err != nil {
			t.Fatalf("%q printed as %q, which does not parse: %v", src, printed, err)
		}
		if !sc.Equals(back) {
			t.Fatalf("%q printed as %q, which parses to another schema:\n%s\n%s", src, printed, sc, back)
		}
		if again := formatSchema(back); again != printed {
			t.Fatalf("%q printed as %q, then as %q", src, printed, again)
		}
	})
}

func FuzzParsePartitionSpec(f *testing.F) {
	sc, err := ddl.ParseSchema("id long not null, data string, ts timestamptz, d date, n int, dec decimal(10,2), b binary, s struct<x: int>", nil)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"day(ts), bucket(16, id), data", "years(d), truncate(4, data), void(n)", "identity(dec), hour(ts)",
		"bucket(0, id)", "truncate(-1, b)", "s.x", "month(ts), month(ts)", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		spec, err := ddl.ParsePartitionSpec(src, sc)
		if err != nil {
			if strings.TrimSpace(err.Error()) == "" {
				t.Fatalf("%q: empty error", src)
			}
			return
		}
		_ = spec.String()
	})
}
