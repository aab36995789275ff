package changelog_test

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/cockroachdb/datadriven"

	"github.com/floedata/floe/changelog"
	"github.com/floedata/floe/internal/rows"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/tableops"
)

// TestScripts replays the reference's test vectors (and floe's extensions)
// written as table operations followed by changelog queries.
func TestScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		e := tabletest.New(t)
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out, err := run(e, d)
			if err != nil {
				msg := err.Error()
				for id, n := range e.Names {
					msg = strings.ReplaceAll(msg, strconv.FormatInt(id, 10), n)
				}
				msg = olderThan.ReplaceAllString(msg, "older than TS")
				return "error: " + msg + "\n"
			}
			return out
		})
	})
}

var olderThan = regexp.MustCompile(`older than [0-9T:.-]+`)

func arg(d *datadriven.TestData, key string) (string, bool) {
	for _, a := range d.CmdArgs {
		if a.Key == key {
			return strings.Join(a.Vals, ","), true
		}
	}
	return "", false
}

func run(e *tabletest.Env, d *datadriven.TestData) (string, error) {
	name := "t"
	if v, ok := arg(d, "table"); ok {
		name = v
	}
	branch, _ := arg(d, "branch")
	target := e.Target(name, branch)
	named := func(o *tableops.Outcome) (string, error) {
		// Keep commit timestamps distinct, so timestamp bounds are exact.
		time.Sleep(3 * time.Millisecond)
		if as, ok := arg(d, "as"); ok {
			tbl := e.Load(name)
			e.Name(tbl, branch, as)
		}
		if o != nil && o.SnapshotID == 0 {
			return "no change\n", nil
		}
		return "", nil
	}
	tuples := func() ([][]any, error) { return tabletest.ParseTuples(d.Input) }
	where := func() (*tableops.Predicate, error) {
		w, ok := arg(d, "where")
		if !ok {
			return nil, nil
		}
		neq := strings.Contains(w, "!=")
		parts := strings.SplitN(strings.Replace(w, "!=", "=", 1), "=", 2)
		if len(parts) != 2 {
			return nil, fmt.Errorf("bad where %q", w)
		}
		return tabletest.ColEq(parts[0], neq, strings.Trim(parts[1], "'")), nil
	}
	switch d.Cmd {
	case "create":
		schema, _ := arg(d, "schema")
		part, _ := arg(d, "partition")
		var ids []string
		if v, ok := arg(d, "identifier"); ok {
			ids = strings.Split(v, ",")
		}
		props := iceberg.Properties{}
		if v, ok := arg(d, "props"); ok {
			for _, kv := range strings.Split(v, ";") {
				k, val, _ := strings.Cut(kv, ":")
				props[k] = val
			}
		}
		_, err := e.Create(name, schema, part, ids, props)
		return "", err
	case "insert", "overwrite", "overwrite-partitions":
		data, err := tuples()
		if err != nil {
			return "", err
		}
		tbl := e.Load(name)
		as := tabletest.ArrowSchema(tbl)
		var o *tableops.Outcome
		switch d.Cmd {
		case "insert":
			o, err = tableops.Append(e.Ctx, target, tabletest.Seq(as, data))
		case "overwrite":
			p, perr := where()
			if perr != nil {
				return "", perr
			}
			o, err = tableops.Overwrite(e.Ctx, target, p, tabletest.Seq(as, data))
		default:
			o, err = overwritePartitions(e, target, tbl, as, data)
		}
		if err != nil {
			return "", err
		}
		return named(o)
	case "delete":
		p, err := where()
		if err != nil {
			return "", err
		}
		o, err := tableops.Delete(e.Ctx, target, p)
		if err != nil {
			return "", err
		}
		return named(o)
	case "update":
		p, err := where()
		if err != nil {
			return "", err
		}
		set, _ := arg(d, "set")
		col, val, _ := strings.Cut(set, "=")
		val = strings.Trim(val, "'")
		o, err := tableops.Update(e.Ctx, target, p, func(_ contextT, rec arrow.RecordBatch, touched []bool) (arrow.RecordBatch, error) {
			return setColumn(rec, touched, col, val)
		})
		if err != nil {
			return "", err
		}
		return named(o)
	case "native-append":
		// iceberg-go's own append, which merges manifests when the table
		// says so (EXISTING entries in new manifests).
		data, err := tuples()
		if err != nil {
			return "", err
		}
		tbl := e.Load(name)
		rec, err := tabletest.Record(tabletest.ArrowSchema(tbl), data)
		if err != nil {
			return "", err
		}
		defer rec.Release()
		rdr, err := array.NewRecordReader(rec.Schema(), []arrow.RecordBatch{rec})
		if err != nil {
			return "", err
		}
		if _, err := tbl.Append(e.Ctx, rdr, nil); err != nil {
			return "", err
		}
		return named(nil)
	case "rewrite-manifests":
		tbl := e.Load(name)
		tx := tbl.NewTransaction()
		if _, err := tx.RewriteManifests(e.Ctx); err != nil {
			return "", err
		}
		if _, err := tx.Commit(e.Ctx); err != nil {
			return "", err
		}
		return named(nil)
	case "expire":
		keep, _ := arg(d, "keep-last")
		n, _ := strconv.Atoi(keep)
		tbl := e.Load(name)
		tx := tbl.NewTransaction()
		if err := tx.ExpireSnapshots(table.WithRetainLast(n), table.WithOlderThan(0)); err != nil {
			return "", err
		}
		_, err := tx.Commit(e.Ctx)
		return "", err
	case "summary":
		tbl := e.Load(name)
		var b strings.Builder
		for _, snap := range tbl.Metadata().Snapshots() {
			fmt.Fprintf(&b, "%s %s\n", e.SnapshotName(snap.SnapshotID), snap.Summary.Operation)
		}
		return b.String(), nil
	case "compact":
		o, err := tableops.Compact(e.Ctx, target)
		if err != nil {
			return "", err
		}
		return named(o)
	case "rollback":
		to, _ := arg(d, "to")
		tbl := e.Load(name)
		tx := tbl.NewTransaction()
		if err := tx.RollbackToSnapshot(e.IDs[to]); err != nil {
			return "", err
		}
		_, err := tx.Commit(e.Ctx)
		return "", err
	case "branch":
		b, _ := arg(d, "name")
		at, _ := arg(d, "at")
		_, _, err := e.Cat.Iceberg().CommitTable(e.Ctx, target.Ident, nil,
			[]table.Update{table.NewSetSnapshotRefUpdate(b, e.IDs[at], table.BranchRef, -1, -1, -1)})
		return "", err
	case "rows":
		var at scan.At
		if v, ok := arg(d, "at"); ok {
			id := e.IDs[v]
			at.SnapshotID = &id
		}
		if branch != "" {
			at.Ref = branch
		}
		got, err := e.Rows(e.Load(name), at)
		if err != nil {
			return "", err
		}
		return strings.Join(got, "\n") + "\n", nil
	case "changelog":
		return changelogCmd(e, d, name)
	}
	return "", fmt.Errorf("unknown command %q", d.Cmd)
}

func changelogCmd(e *tabletest.Env, d *datadriven.TestData, name string) (string, error) {
	var o changelog.Options
	snapArg := func(key string) (*int64, error) {
		v, ok := arg(d, key)
		if !ok {
			return nil, nil
		}
		if id, ok := e.IDs[v]; ok {
			return &id, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("unknown snapshot name %q", v)
		}
		return &n, nil
	}
	tbl := e.Load(name)
	tsArg := func(key string) (*int64, error) {
		v, ok := arg(d, key)
		if !ok {
			return nil, nil
		}
		off := int64(0)
		if i := strings.IndexAny(v, "+-"); i > 0 {
			n, err := strconv.ParseInt(v[i:], 10, 64)
			if err != nil {
				return nil, err
			}
			off, v = n, v[:i]
		}
		_, ok = e.IDs[v]
		if !ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("unknown snapshot name %q", v)
			}
			return &n, nil
		}
		ts := e.TS[v] + off
		return &ts, nil
	}
	var err error
	if o.StartSnapshotID, err = snapArg("start"); err != nil {
		return "", err
	}
	if o.EndSnapshotID, err = snapArg("end"); err != nil {
		return "", err
	}
	if o.StartTimestampMs, err = tsArg("start-ts"); err != nil {
		return "", err
	}
	if o.EndTimestampMs, err = tsArg("end-ts"); err != nil {
		return "", err
	}
	o.Ref, _ = arg(d, "ref")
	if v, ok := arg(d, "identifier"); ok {
		o.IdentifierColumns = strings.Split(v, ",")
	}
	if v, ok := arg(d, "compute-updates"); ok {
		b := v == "true"
		o.ComputeUpdates = &b
	}
	_, o.NetChanges = arg(d, "net-changes")
	if v, ok := arg(d, "per-key"); ok {
		if o.PerKey, err = changelog.ParsePerKey(v); err != nil {
			return "", err
		}
	}
	if v, ok := arg(d, "columns"); ok {
		o.Columns = strings.Split(v, ",")
	}
	if w, ok := arg(d, "where"); ok {
		neq := strings.Contains(w, "!=")
		parts := strings.SplitN(strings.Replace(w, "!=", "=", 1), "=", 2)
		p := tabletest.ColEq(parts[0], neq, strings.Trim(parts[1], "'"))
		o.RowFilter = func(ctx contextT, rec arrow.RecordBatch) (arrow.RecordBatch, error) {
			col := rec.Schema().FieldIndices(parts[0])
			sub := rows.Project(rec, arrow.NewSchema([]arrow.Field{rec.Schema().Field(col[0])}, nil), col)
			defer sub.Release()
			keep, err := p.Match(ctx, sub)
			if err != nil {
				return nil, err
			}
			return rows.Select(ctx, rec, keep)
		}
	}
	if v, ok := arg(d, "budget"); ok {
		n, _ := strconv.ParseInt(v, 10, 64)
		o.MemoryBudget = n
	}
	sch, seq, err := changelog.Scan(e.Ctx, tbl, o)
	if err != nil {
		return "", err
	}
	type line struct {
		ord  int32
		text string
	}
	var lines []line
	nData := sch.NumFields() - 3
	for rec, err := range seq {
		if err != nil {
			return "", err
		}
		kinds := rec.Column(nData).(*array.String)
		ords := rec.Column(nData + 1).(*array.Int32)
		snaps := rec.Column(nData + 2).(*array.Int64)
		data := rows.Project(rec, arrow.NewSchema(sch.Fields()[:nData], nil), seqInts(nData))
		for i := 0; i < int(rec.NumRows()); i++ {
			tup := rows.FormatRow(data, i)
			text := fmt.Sprintf("%s,%s,%d,%s)", tup[:len(tup)-1], kinds.Value(i), ords.Value(i), e.SnapshotName(snaps.Value(i)))
			lines = append(lines, line{ords.Value(i), text})
		}
		data.Release()
		rec.Release()
	}
	sort.Slice(lines, func(i, j int) bool {
		if lines[i].ord != lines[j].ord {
			return lines[i].ord < lines[j].ord
		}
		return lines[i].text < lines[j].text
	})
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l.text + "\n")
	}
	if len(lines) == 0 {
		b.WriteString("(no rows)\n")
	}
	return b.String(), nil
}

func seqInts(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
