//go:build interop

package interop_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/internal/rowjson"
	"github.com/floedata/floe/interop"
)

// mrow is a row of the trials' tables (id long not null, v string, n long),
// as the test's own model holds it.
type mrow struct {
	id int64
	v  *string
	n  int64
}

var faultCols = []string{"id", "v", "n"}

// values returns the row as floe prints it in JSON Lines.
func (r mrow) values() map[string]any {
	m := map[string]any{"id": json.Number(strconv.FormatInt(r.id, 10)), "v": nil, "n": json.Number(strconv.FormatInt(r.n, 10))}
	if r.v != nil {
		m["v"] = *r.v
	}
	return m
}

// canonRow renders the named columns of a row (JSON values, numbers as
// json.Number) as one comparable string.
func canonRow(row map[string]any, cols []string) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		var s string
		switch v := row[c].(type) {
		case nil:
			s = "NULL"
		case json.Number:
			s = v.String()
		case string:
			s = strconv.Quote(v)
		default:
			s = fmt.Sprint(v)
		}
		parts[i] = c + "=" + s
	}
	return strings.Join(parts, " ")
}

// canonModel renders model rows, keeping those keep accepts (nil: all).
func canonModel(rows []mrow, cols []string, keep func(mrow) bool) []string {
	out := []string{}
	for _, r := range rows {
		if keep == nil || keep(r) {
			out = append(out, canonRow(r.values(), cols))
		}
	}
	sort.Strings(out)
	return out
}

// canonTable renders rows read by an engine.
func canonTable(t *rowjson.Table, cols []string) []string {
	out := []string{}
	for _, r := range t.Rows {
		m := map[string]any{}
		for i, c := range t.Columns {
			m[c.Name] = r[i]
		}
		out = append(out, canonRow(m, cols))
	}
	sort.Strings(out)
	return out
}

// rowsDiff describes how got differs from want (both sorted), or "".
func rowsDiff(want, got []string) string {
	if slices.Equal(want, got) {
		return ""
	}
	count := map[string]int{}
	for _, w := range want {
		count[w]++
	}
	for _, g := range got {
		count[g]--
	}
	var missing, extra []string
	for k, n := range count {
		for ; n > 0; n-- {
			missing = append(missing, k)
		}
		for ; n < 0; n++ {
			extra = append(extra, k)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	return fmt.Sprintf("%d rows, want %d; missing %s; unexpected %s", len(got), len(want),
		truncateText(strings.Join(missing, " | "), 400), truncateText(strings.Join(extra, " | "), 400))
}

// refExpect is a ref a command moves: nil means absent.
type refExpect struct {
	name          string
	before, after *int64
}

// expectTable is what one table must look like before and after one
// successful run of a trial's command.
type expectTable struct {
	name string // "ns.t"
	cols []string
	// absent: the table does not exist before the command (before is then
	// empty).
	absent        bool
	before, after []string // canonical rows, sorted
	// props must hold after a successful run.
	props map[string]string
	// watermarkOf names a table whose current snapshot id the
	// watermark.source-snapshot-id property must hold after a successful run
	// (an upstream transform's output, whose id is not known beforehand).
	watermarkOf string
	// commits is how many snapshots one successful run adds.
	commits int
	// ref, for commands that move a ref and write no snapshot.
	ref *refExpect
	// eqDeletes: PyIceberg cannot read the table (equality deletes); Spark
	// reads it.
	eqDeletes bool
}

// snapInfo is one snapshot of a table.
type snapInfo struct {
	id      int64
	summary map[string]string
}

// tableState is a table as the server has it (read with iceberg-go
// straight from the server, no proxy) and as floe reads it.
type tableState struct {
	exists  bool
	loadErr error
	snaps   []snapInfo
	refs    map[string]int64
	props   map[string]string
	missing []string // referenced files that do not exist
	rows    []string // floe's scan of main, canonical
	scanErr string
	scanned bool // rows and scanErr are set
}

// newSnapshots returns the snapshots of s that base does not have.
func (s *tableState) newSnapshots(base *tableState) []snapInfo {
	have := map[int64]bool{}
	if base != nil {
		for _, x := range base.snaps {
			have[x.id] = true
		}
	}
	var out []snapInfo
	for _, x := range s.snaps {
		if !have[x.id] {
			out = append(out, x)
		}
	}
	return out
}

func (s *tableState) head() int64 { return s.refs[table.MainBranch] }

// state reads ex's table, and its rows with floe.
func (x *trialCtx) state(ex *expectTable) *tableState { return x.stateOf(ex, true) }

// stateOf reads ex's table, and its rows with floe when scan is set.
func (x *trialCtx) stateOf(ex *expectTable, scan bool) *tableState {
	s := &tableState{refs: map[string]int64{}, props: map[string]string{}}
	ctx := x.env.ctx
	ident := table.Identifier(strings.Split(ex.name, "."))
	tbl, err := x.env.direct.LoadTable(ctx, ident)
	if err != nil {
		if errors.Is(err, catalog.ErrNoSuchTable) {
			return s
		}
		s.loadErr = err
		return s
	}
	s.exists = true
	md := tbl.Metadata()
	for k, v := range md.Properties() {
		s.props[k] = v
	}
	for name, ref := range md.Refs() {
		s.refs[name] = ref.SnapshotID
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		s.loadErr = err
		return s
	}
	checked := map[string]bool{}
	exists := func(p string) bool {
		if ok, seen := checked[p]; seen {
			return ok
		}
		local := p
		if u, err := url.Parse(p); err == nil && u.Scheme == "file" {
			local = u.Path
		}
		_, err := os.Stat(local)
		checked[p] = err == nil
		if err != nil {
			s.missing = append(s.missing, p)
		}
		return err == nil
	}
	exists(tbl.MetadataLocation())
	for _, snap := range md.Snapshots() {
		s.snaps = append(s.snaps, snapInfo{id: snap.SnapshotID, summary: summaryProps(snap.Summary)})
		if !exists(snap.ManifestList) {
			continue
		}
		mfs, err := snap.Manifests(fs)
		if err != nil {
			s.missing = append(s.missing, fmt.Sprintf("%s (%v)", snap.ManifestList, err))
			continue
		}
		for _, mf := range mfs {
			if !exists(mf.FilePath()) {
				continue
			}
			for e, err := range mf.Entries(fs, true) {
				if err != nil {
					s.missing = append(s.missing, fmt.Sprintf("%s (%v)", mf.FilePath(), err))
					break
				}
				exists(e.DataFile().FilePath())
			}
		}
	}
	s.scanned = scan
	if !scan {
		return s
	}
	if s.head() != 0 {
		run := x.env.runFloe(x.dir, "--format", "jsonl", "table", "scan", ex.name)
		if run.exit != 0 {
			s.scanErr = strings.TrimSpace(truncateText(run.stderr, 600))
		} else if rows, err := decodeScan(run.stdout, ex.cols); err != nil {
			s.scanErr = err.Error()
		} else {
			s.rows = rows
		}
	} else {
		s.rows = []string{}
	}
	return s
}

func summaryProps(sum *table.Summary) map[string]string {
	out := map[string]string{}
	if sum == nil {
		return out
	}
	out["operation"] = string(sum.Operation)
	for k, v := range sum.Properties {
		out[k] = v
	}
	return out
}

// decodeScan reads floe's JSON Lines scan output.
func decodeScan(out string, cols []string) ([]string, error) {
	rows := []string{}
	dec := json.NewDecoder(bytes.NewReader([]byte(out)))
	dec.UseNumber()
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			return nil, fmt.Errorf("floe table scan printed %q: %v", truncateText(out, 200), err)
		}
		rows = append(rows, canonRow(m, cols))
	}
	sort.Strings(rows)
	return rows, nil
}

// matchesBefore checks the table before the command against the model.
func (ex *expectTable) matchesBefore(s *tableState) string {
	switch {
	case s.loadErr != nil:
		return s.loadErr.Error()
	case ex.absent && s.exists:
		return "exists, want absent"
	case ex.absent:
		return ""
	case !s.exists:
		return "does not exist"
	case s.scanErr != "":
		return "floe cannot read it: " + s.scanErr
	case len(s.missing) > 0:
		return "references missing files " + strings.Join(s.missing, ", ")
	}
	if d := rowsDiff(ex.before, s.rows); s.scanned && d != "" {
		return "rows: " + d
	}
	if ex.ref != nil {
		if got, ok := s.refs[ex.ref.name]; ok != (ex.ref.before != nil) || (ok && got != *ex.ref.before) {
			return fmt.Sprintf("ref %s is %d (exists %v)", ex.ref.name, got, ok)
		}
	}
	return ""
}

// landedIn says whether the command's change is in s (relative to before).
func (ex *expectTable) landedIn(before, s *tableState) bool {
	if !s.exists {
		return false
	}
	if ex.ref != nil {
		got, ok := s.refs[ex.ref.name]
		if ex.ref.after == nil {
			return !ok
		}
		return ok && got == *ex.ref.after
	}
	if len(s.newSnapshots(before)) > 0 {
		return true
	}
	for k := range ex.props {
		if s.props[k] != before.props[k] {
			return true
		}
	}
	return false
}

// check checks s, the table after the faulted run, against the model:
// unchanged, or changed exactly as one successful run changes it. It returns
// whether the change landed and the commit ids of the new snapshots.
func (ex *expectTable) check(res *trialResult, before, s *tableState, heads map[string]int64) (bool, []string) {
	const when = "after the faulted run"
	if !ex.readable(res, when, s) {
		return false, nil
	}
	landed := ex.landedIn(before, s)
	fresh := s.newSnapshots(before)
	if !landed {
		if !ex.absent || s.exists {
			if d := rowsDiff(ex.before, s.rows); s.scanErr == "" && d != "" {
				res.problemf("%s %s: unchanged by the command, but its rows differ from before: %s", ex.name, when, d)
			}
		}
		if ex.ref != nil && len(fresh) > 0 {
			res.problemf("%s %s: %d new snapshot(s), want none", ex.name, when, len(fresh))
		}
		return false, nil
	}
	ex.matchesAfter(res, when, s, heads)
	if ex.ref != nil {
		if len(fresh) > 0 {
			res.problemf("%s %s: %d new snapshot(s), want none", ex.name, when, len(fresh))
		}
		if id := s.props[lastCommitIDKey]; id != "" && id != before.props[lastCommitIDKey] {
			return true, []string{id}
		}
		return true, nil
	}
	if len(fresh) != ex.commits {
		res.problemf("%s %s: %d new snapshot(s), want %d (one successful run's; a commit landed twice?)", ex.name, when, len(fresh), ex.commits)
	}
	return true, ex.commitIDs(res, when, s, fresh)
}

// checkFinal checks s, the table after the rerun: exactly as one
// successful run leaves it. landed says whether the faulted run's change had
// landed (mid is the table after it); guard, that a rerun of a landed change
// must commit nothing.
func (ex *expectTable) checkFinal(res *trialResult, before, mid, s *tableState, landed, guard bool, heads map[string]int64) {
	const when = "after the rerun"
	if !ex.readable(res, when, s) {
		return
	}
	if !ex.landedIn(before, s) {
		res.problemf("%s %s: the change is not there", ex.name, when)
		return
	}
	ex.matchesAfter(res, when, s, heads)
	if ex.ref != nil {
		if n := len(s.newSnapshots(before)); n > 0 {
			res.problemf("%s %s: %d new snapshot(s), want none", ex.name, when, n)
		}
		return
	}
	fresh := s.newSnapshots(mid)
	switch n := len(fresh); {
	case landed && guard && n != 0:
		res.problemf("%s %s: the rerun committed %d snapshot(s) although the faulted run's commit had landed (it must see its own watermark and commit nothing)", ex.name, when, n)
	case landed && !guard && n != 0 && n != ex.commits:
		res.problemf("%s %s: the rerun committed %d snapshot(s), want 0 or %d", ex.name, when, n, ex.commits)
	case !landed && n != ex.commits:
		res.problemf("%s %s: the rerun committed %d snapshot(s), want %d", ex.name, when, n, ex.commits)
	}
	ex.commitIDs(res, when, s, fresh)
}

// readable checks what every state after a run must satisfy: the table
// loads, floe reads it, and every file it references exists.
func (ex *expectTable) readable(res *trialResult, when string, s *tableState) bool {
	if s.loadErr != nil {
		res.problemf("%s %s: loading it from the server: %v", ex.name, when, s.loadErr)
		return false
	}
	if len(s.missing) > 0 {
		res.problemf("%s %s: references files that do not exist (data loss): %s", ex.name, when, truncateText(strings.Join(s.missing, ", "), 800))
	}
	if s.scanErr != "" {
		res.problemf("%s %s: floe cannot read it: %s", ex.name, when, s.scanErr)
	}
	return true
}

// matchesAfter compares s with one successful run's result.
func (ex *expectTable) matchesAfter(res *trialResult, when string, s *tableState, heads map[string]int64) {
	if d := rowsDiff(ex.after, s.rows); s.scanErr == "" && d != "" {
		res.problemf("%s %s: rows differ from one successful run's: %s", ex.name, when, d)
	}
	for k, v := range ex.props {
		if s.props[k] != v {
			res.problemf("%s %s: property %s is %q, want %q", ex.name, when, k, s.props[k], v)
		}
	}
	if ex.watermarkOf != "" {
		want := strconv.FormatInt(heads[ex.watermarkOf], 10)
		if got := s.props["watermark.source-snapshot-id"]; got != want {
			res.problemf("%s %s: watermark.source-snapshot-id is %q, want %s (the current snapshot of %s)", ex.name, when, got, want, ex.watermarkOf)
		}
	}
	if ex.ref != nil {
		got, ok := s.refs[ex.ref.name]
		if ex.ref.after == nil && ok {
			res.problemf("%s %s: ref %s still exists", ex.name, when, ex.ref.name)
		}
		if ex.ref.after != nil && (!ok || got != *ex.ref.after) {
			res.problemf("%s %s: ref %s is at %d (exists %v), want %d", ex.name, when, ex.ref.name, got, ok, *ex.ref.after)
		}
	}
}

// commitIDs checks that the table's commit ids are unique and that each
// fresh snapshot has one, and returns those.
func (ex *expectTable) commitIDs(res *trialResult, when string, s *tableState, fresh []snapInfo) []string {
	seen := map[string]bool{}
	for _, sn := range s.snaps {
		if id := sn.summary[commitIDKey]; id != "" {
			if seen[id] {
				res.problemf("%s %s: two snapshots carry %s %s", ex.name, when, commitIDKey, id)
			}
			seen[id] = true
		}
	}
	var ids []string
	for _, sn := range fresh {
		id := sn.summary[commitIDKey]
		if id == "" {
			res.problemf("%s %s: snapshot %d has no %s in its summary", ex.name, when, sn.id, commitIDKey)
			continue
		}
		ids = append(ids, id)
	}
	return ids
}

// engineRead reads the final table with PyIceberg (Spark for equality
// deletes, which PyIceberg does not read) and compares with the model.
func (x *trialCtx) engineRead(ex *expectTable, s *tableState) {
	if s == nil || s.head() == 0 {
		return
	}
	var got *rowjson.Table
	var err error
	engine := "PyIceberg"
	if ex.eqDeletes {
		engine = "Spark"
		got, err = x.env.spark.SQL(x.env.ctx, x.env.sess, "SELECT * FROM floe."+ex.name)
	} else {
		got, err = x.env.py.IcebergScan(x.env.ctx, x.env.srv.PyIceberg("floe"), ex.name, interop.ScanOptions{})
	}
	if err != nil {
		x.res.problemf("%s: %s cannot read it: %v", ex.name, engine, err)
		return
	}
	if d := rowsDiff(ex.after, canonTable(got, ex.cols)); d != "" {
		x.res.problemf("%s: %s reads rows that differ from one successful run's: %s", ex.name, engine, d)
		return
	}
	x.res.engineReads[engine]++
	x.res.logf("%s read %s: %d rows as expected", engine, ex.name, len(got.Rows))
}
