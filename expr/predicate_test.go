package expr

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
)

var predicateTable = iceberg.NewSchema(1,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "status", Type: iceberg.PrimitiveTypes.String},
	iceberg.NestedField{ID: 3, Name: "amount", Type: iceberg.PrimitiveTypes.Float64},
)

func TestCompilePredicate(t *testing.T) {
	for _, c := range []struct {
		text    string
		iceberg string // the pruning filter
		exact   bool
		columns string
		match   string // per row of the batch below
	}{
		{"status = 'active'", `Equal(term=Reference(name='status'), literal=active)`, true, "status", "true false false"},
		// Columns come in the table's order, named as the table names them.
		{"Amount > 1 AND ID < 3", "", false, "id,amount", "true false false"},
		// Nothing to push down: the filter keeps every file.
		{"id + 1 = 2", "AlwaysTrue()", false, "id", "true false false"},
		{"true", "AlwaysTrue()", true, "", "true true true"},
	} {
		p, err := CompilePredicate(predicateTable, c.text)
		if err != nil {
			t.Fatalf("%s: %v", c.text, err)
		}
		if got := p.Iceberg.String(); c.iceberg != "" && got != c.iceberg {
			t.Errorf("%s: iceberg %s, want %s", c.text, got, c.iceberg)
		}
		if p.Exact != c.exact || strings.Join(p.Columns, ",") != c.columns {
			t.Errorf("%s: exact %v columns %v", c.text, p.Exact, p.Columns)
		}
		rows := jsonBatch(t, memory.DefaultAllocator, p.OnRows.schema,
			`[{"id":1,"status":"active","amount":2.5},{"id":2,"status":"paid","amount":0},{"id":3,"status":null,"amount":9}]`)
		var onCols []int
		for _, name := range p.Columns {
			onCols = append(onCols, rows.Schema().FieldIndices(name)[0])
		}
		cols := rows
		if len(onCols) != int(rows.NumCols()) {
			cols = project(rows, onCols)
		}
		m, err := p.Match(t.Context(), cols)
		if err != nil {
			t.Fatalf("%s: %v", c.text, err)
		}
		var got []string
		for _, v := range m {
			got = append(got, map[bool]string{true: "true", false: "false"}[v])
		}
		if strings.Join(got, " ") != c.match {
			t.Errorf("%s: match %v, want %s", c.text, got, c.match)
		}
		f, err := p.OnRows.Filter(t.Context(), rows)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(c.match, "true"); int(f.NumRows()) != n {
			t.Errorf("%s: OnRows keeps %d rows, Match %d", c.text, f.NumRows(), n)
		}
		f.Release()
		if cols != rows {
			cols.Release()
		}
		rows.Release()
	}
}

func TestCompilePredicateErrors(t *testing.T) {
	for _, c := range []struct {
		text, want string
		kind       error
	}{
		{"status = ", "position 9: expected an expression but found end of input\nstatus = \n         ^", ErrSyntax},
		{"colour = 'red'", "position 0: unknown column colour", ErrUnknownColumn},
		{"amount + 1", "a filter needs a boolean expression", ErrType},
		{"status > 1 AND", "position 14", ErrSyntax},
	} {
		_, err := CompilePredicate(predicateTable, c.text)
		var ce *CompileError
		if !errors.As(err, &ce) || ce.Text != c.text || !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.text, err)
		}
		// The message marks the position under the text.
		if !strings.Contains(err.Error(), "\n"+c.text+"\n") {
			t.Errorf("%s: no caret line in %q", c.text, err)
		}
	}
}

func TestCompileAssignments(t *testing.T) {
	a, err := CompileAssignments(predicateTable, "status = upper(status), amount = amount * 2")
	if err != nil {
		t.Fatal(err)
	}
	rec := jsonBatch(t, memory.DefaultAllocator, a.Schema, `[{"id":1,"status":"active","amount":2.5},{"id":2,"status":null,"amount":1}]`)
	defer rec.Release()
	out, err := a.Apply(t.Context(), rec)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	if got := recString(out); got != `[{"amount":5,"id":1,"status":"ACTIVE"},{"amount":2,"id":2,"status":null}]` {
		t.Errorf("applied %s", got)
	}
	null, err := CompileAssignments(predicateTable, "id = NULL")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := null.Apply(t.Context(), rec); err == nil || err.Error() != "id = NULL: column id is NOT NULL but the new value is NULL" {
		t.Errorf("NULL into NOT NULL: %v", err)
	}
	for _, c := range []struct{ text, want string }{
		{"nosuch = 1", "position 0: nosuch is not a column of the table (columns: id, status, amount)\nnosuch = 1\n^"},
		{"amount = 'x'", "column amount: position 9"},
		{"amount =", "position 8"},
	} {
		_, err := CompileAssignments(predicateTable, c.text)
		var ce *CompileError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.text, err)
		}
	}
}

// project returns the columns idx of rec, as a new batch.
func project(rec arrow.RecordBatch, idx []int) arrow.RecordBatch {
	fields := make([]arrow.Field, len(idx))
	cols := make([]arrow.Array, len(idx))
	for i, j := range idx {
		fields[i], cols[i] = rec.Schema().Field(j), rec.Column(j)
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, rec.NumRows())
}

func recString(rec arrow.RecordBatch) string {
	b, err := rec.MarshalJSON()
	if err != nil {
		return err.Error()
	}
	return strings.ReplaceAll(string(b), "\n", "")
}
