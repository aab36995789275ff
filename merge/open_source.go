package merge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/expr"
	"github.com/floedata/floe/internal/rowfile"
	"github.com/floedata/floe/internal/scan"
)

// OpenSource opens the USING relation of a MERGE INTO statement for Merge:
// a file (Parquet, CSV, JSON Lines; see sourceFileSchema for the types its
// columns get, guided by the target's) or a table at its current snapshot.
// The caller calls closeSource when done with the rows. A file whose
// format its name does not tell fails with an error wrapping
// rowfile.ErrFormat; one that does not exist with fs.ErrNotExist.
func OpenSource(ctx context.Context, cat *catalog.Catalog, stmt *expr.Merge, target *table.Table) (src Source, closeSource func(), err error) {
	if stmt.Source.Path == "" {
		name := stmt.Source.Table
		if q := stmt.Source.Query; q != nil {
			name = q.From // Merge applies the subquery to its rows
		}
		tbl, err := cat.Load(ctx, table.Identifier(name))
		if err != nil {
			return Source{}, nil, err
		}
		schema, seq, err := scan.Rows(ctx, tbl, scan.Options{})
		if err != nil {
			return Source{}, nil, err
		}
		return Source{Schema: schema, Rows: seq}, func() {}, nil
	}
	path := stmt.Source.Path
	format, err := rowfile.FormatFromPath(path)
	if err != nil {
		return Source{}, nil, err
	}
	hint, err := table.SchemaToArrowSchema(target.Schema(), nil, true, false)
	if err != nil {
		return Source{}, nil, err
	}
	schema, err := sourceFileSchema(path, format, hint)
	if err != nil {
		return Source{}, nil, err
	}
	rd, err := rowfile.Open(ctx, path, rowfile.ReadOptions{Target: schema, Format: format})
	if err != nil {
		return Source{}, nil, err
	}
	return Source{Schema: rd.Schema(), Rows: rd.All()}, func() { rd.Close() }, nil
}

// sourceFileSchema returns the schema a MERGE source file is read with.
// Parquet columns keep the file's types. CSV and JSON columns named like a
// column of hint (the target table) take its type, so that values parse as
// they would when appended to it; other CSV columns are strings, other JSON
// columns take the type of their values (boolean, long, double or string).
// Every field is nullable and carries no metadata.
func sourceFileSchema(path string, format rowfile.Format, hint *arrow.Schema) (*arrow.Schema, error) {
	var names []string
	types := map[string]arrow.DataType{}
	switch format {
	case rowfile.FormatParquet:
		return parquetSchema(path)
	case rowfile.FormatCSV:
		header, err := csvHeader(path)
		if err != nil {
			return nil, err
		}
		names = header
	case rowfile.FormatJSONL:
		var err error
		if names, types, err = jsonColumns(path, hint); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%s: unsupported source format", path)
	}
	fields := make([]arrow.Field, len(names))
	for i, n := range names {
		dt := types[n]
		for _, f := range hint.Fields() {
			if strings.EqualFold(f.Name, n) {
				dt = f.Type
			}
		}
		if dt == nil {
			dt = arrow.BinaryTypes.String
		}
		fields[i] = arrow.Field{Name: n, Type: dt, Nullable: true}
	}
	return arrow.NewSchema(fields, nil), nil
}

func parquetSchema(path string) (*arrow.Schema, error) {
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer pf.Close()
	s, err := pqarrow.FromParquet(pf.MetaData().Schema, nil, pf.MetaData().KeyValueMetadata())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	fields := make([]arrow.Field, s.NumFields())
	for i, f := range s.Fields() {
		fields[i] = arrow.Field{Name: f.Name, Type: f.Type, Nullable: true}
	}
	return arrow.NewSchema(fields, nil), nil
}

// csvHeader reads the header row of a CSV file.
func csvHeader(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	if b, err := br.Peek(3); err == nil && bytes.Equal(b, []byte{0xEF, 0xBB, 0xBF}) {
		_, _ = br.Discard(3)
	}
	header, err := csv.NewReader(br).Read()
	if err == io.EOF {
		return nil, fmt.Errorf("%s: the file is empty: a CSV source needs a header row", path)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: header row: %w", path, err)
	}
	return header, nil
}

// jsonColumns scans a JSON Lines file (or a JSON array of objects) for its
// keys, in order of first appearance, and the types of the values of keys
// hint has no column for.
func jsonColumns(path string, hint *arrow.Schema) ([]string, map[string]arrow.DataType, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	inHint := func(k string) bool {
		for _, h := range hint.Fields() {
			if strings.EqualFold(h.Name, k) {
				return true
			}
		}
		return false
	}
	var names []string
	kinds := map[string]string{}
	types := map[string]arrow.DataType{}
	dec := json.NewDecoder(bufio.NewReader(f))
	dec.UseNumber()
	array := false
	if t, err := dec.Token(); err == nil {
		if t == json.Delim('[') {
			array = true
		} else if t != json.Delim('{') {
			return nil, nil, fmt.Errorf("%s: line 1: expected a JSON object", path)
		}
	} else if err == io.EOF {
		return nil, nil, nil
	} else {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	first := !array // the first object's '{' was read already
	for {
		if !first {
			if array && !dec.More() {
				break
			}
			t, err := dec.Token()
			if err == io.EOF && !array {
				break
			}
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", path, err)
			}
			if t != json.Delim('{') {
				return nil, nil, fmt.Errorf("%s: offset %d: expected a JSON object", path, dec.InputOffset())
			}
		}
		first = false
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", path, err)
			}
			key := kt.(string)
			var v any
			if err := dec.Decode(&v); err != nil {
				return nil, nil, fmt.Errorf("%s: key %q: %w", path, key, err)
			}
			if _, seen := kinds[key]; !seen {
				names = append(names, key)
				kinds[key] = ""
			}
			if inHint(key) || v == nil {
				continue
			}
			kind := jsonKind(v)
			if kind == "nested" {
				return nil, nil, fmt.Errorf("%s: key %q holds JSON objects or arrays; only columns of the target table may be nested", path, key)
			}
			switch old := kinds[key]; {
			case old == "" || old == kind:
				kinds[key] = kind
			case (old == "long" && kind == "double") || (old == "double" && kind == "long"):
				kinds[key] = "double"
			default:
				return nil, nil, fmt.Errorf("%s: offset %d: key %q has %s and %s values; a source column needs one type", path, dec.InputOffset(), key, old, kind)
			}
		}
		if _, err := dec.Token(); err != nil { // '}'
			return nil, nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	for k, kind := range kinds {
		switch kind {
		case "boolean":
			types[k] = arrow.FixedWidthTypes.Boolean
		case "long":
			types[k] = arrow.PrimitiveTypes.Int64
		case "double":
			types[k] = arrow.PrimitiveTypes.Float64
		}
	}
	return names, types, nil
}

func jsonKind(v any) string {
	switch x := v.(type) {
	case bool:
		return "boolean"
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return "long"
		}
		return "double"
	case string:
		return "string"
	}
	return "nested"
}
