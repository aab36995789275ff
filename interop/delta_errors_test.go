//go:build interop

package interop_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/floedata/floe/internal/rowjson"
	"github.com/floedata/floe/interop"
)

// cdfBound is one bound of an error case: a version, a timestamp, or unset.
type cdfBound struct {
	version *int64
	ts      *time.Time
}

func atV(v int64) cdfBound      { return cdfBound{version: &v} }
func atT(ts time.Time) cdfBound { return cdfBound{ts: &ts} }

func (b cdfBound) set() bool { return b.version != nil || b.ts != nil }

func isoMillis(ts time.Time) string { return ts.UTC().Format("2006-01-02T15:04:05.000Z") }

func (b cdfBound) String() string {
	switch {
	case b.version != nil:
		return "version " + strconv.FormatInt(*b.version, 10)
	case b.ts != nil:
		return "timestamp " + isoMillis(*b.ts)
	}
	return "latest"
}

// rsTimestampFilter: delta-rs 1.6.6's load_cdf does not resolve an end
// timestamp to a version; it keeps the commits dated inside the bounds, so an
// end timestamp before the first commit, or before the start timestamp,
// answers no rows where delta-spark fails (DELTA_TIMESTAMP_EARLIER_THAN_COMMIT_RETENTION,
// DELTA_INVALID_CDC_RANGE). PROTOCOL.md does not say; delta-spark decides.
const rsTimestampFilter = "delta-rs filters commits by an end timestamp instead of resolving it (docs/interop.md)"

// cdfErrorCase is a change data read at the edge of a table's history.
type cdfErrorCase struct {
	name       string
	path       string // the table (the history's, or a copy with a cleaned-up log)
	start, end cdfBound
	// fault is the text floe's message must hold when it fails: the version
	// or timestamp at fault.
	fault string
	// rsDiffers explains (docs/interop.md) why delta-rs's cdfOutcome is not
	// compared with delta-spark's for this case; empty means it is.
	rsDiffers string
}

func (c cdfErrorCase) floeArgs() []string {
	args := []string{"delta", "changes", c.path}
	for _, b := range []struct {
		name string
		b    cdfBound
	}{{"start", c.start}, {"end", c.end}} {
		switch {
		case b.b.version != nil:
			args = append(args, "--"+b.name+"-version", strconv.FormatInt(*b.b.version, 10))
		case b.b.ts != nil:
			args = append(args, "--"+b.name+"-timestamp", isoMillis(*b.b.ts))
		}
	}
	return args
}

func (c cdfErrorCase) sparkQuery() string {
	lit := func(b cdfBound) string {
		if b.version != nil {
			return strconv.FormatInt(*b.version, 10)
		}
		return sqlLit(b.ts.UTC().Format("2006-01-02 15:04:05.000"))
	}
	q := "SELECT * FROM table_changes_by_path(" + sqlLit(c.path) + ", " + lit(c.start)
	if c.end.set() {
		q += ", " + lit(c.end)
	}
	return q + ")"
}

func (c cdfErrorCase) rsArgs() map[string]any {
	kw := map[string]any{}
	for _, b := range []struct {
		name string
		b    cdfBound
	}{{"starting", c.start}, {"ending", c.end}} {
		switch {
		case b.b.version != nil:
			kw[b.name+"_version"] = *b.b.version
		case b.b.ts != nil:
			kw[b.name+"_timestamp"] = isoMillis(*b.b.ts)
		}
	}
	return map[string]any{"path": c.path, "kw": kw}
}

// cdfOutcome is an engine's answer to a case: rows, or the error's message.
type cdfOutcome struct {
	rows *rowjson.Table
	err  string
}

func (o cdfOutcome) String() string {
	if o.err != "" {
		return "fails: " + truncateText(o.err, 300)
	}
	return fmt.Sprintf("answers %d rows", len(o.rows.Rows))
}

// checkErrors reads change data at the edges of the history, where a
// reader must refuse the range or clamp it, with floe, delta-spark
// (table_changes_by_path) and delta-rs (load_cdf): for each case floe and
// delta-spark both fail, floe's message naming the version or timestamp at
// fault, or both answer the same rows. delta-rs is held to delta-spark's
// cdfOutcome except where docs/interop.md documents a difference.
func (h *deltaHistory) checkErrors(t *testing.T, l *lab) {
	latest := h.latest(t)
	if latest < 3 {
		t.Skip("fewer than four versions")
	}
	info, mtime := deltaCommitTimes(t, h.path, latest)
	first := time.UnixMilli(min(info[0], mtime[0])).UTC()
	last := time.UnixMilli(max(info[latest], mtime[latest])).UTC()
	day := 24 * time.Hour
	v := strconv.FormatInt
	cases := []cdfErrorCase{
		{name: "start version after the latest", start: atV(latest + 1), fault: v(latest+1, 10)},
		{name: "start and end versions after the latest", start: atV(latest + 1), end: atV(latest + 3), fault: v(latest+1, 10)},
		{name: "end version before start", start: atV(latest - 1), end: atV(1), fault: v(latest-1, 10)},
		{name: "negative start version", start: atV(-1), end: atV(1), fault: "-1"},
		{name: "end version after the latest", start: atV(latest - 2), end: atV(latest + 5), fault: v(latest+5, 10)},
		{name: "start timestamp after the latest commit", start: atT(last.Add(day)), fault: isoMillis(last.Add(day))},
		{name: "end timestamp before the first commit", start: atT(first.Add(-2 * day)), end: atT(first.Add(-day)), fault: isoMillis(first.Add(-day)),
			rsDiffers: rsTimestampFilter},
	}
	// A start at the latest commit and an end at the first, by both
	// conventions of dating a commit (docs/interop.md): both bounds inside
	// the history, the start after the end.
	if lo, hi := max(info[0], mtime[0]), min(info[1], mtime[1]); lo < hi {
		st := time.UnixMilli(min(info[latest], mtime[latest])).UTC()
		cases = append(cases, cdfErrorCase{name: "start timestamp after end timestamp", start: atT(st), end: atT(time.UnixMilli(lo).UTC()), fault: isoMillis(st), rsDiffers: rsTimestampFilter})
	} else {
		t.Logf("versions 0 and 1 are dated too close together for an end timestamp all engines resolve alike (%v, %v): start timestamp after end timestamp not checked", info[:2], mtime[:2])
	}
	for i := range cases {
		cases[i].path = h.path
	}
	cases = append(cases, h.cleanedLogCases(t, l, latest)...)
	for _, c := range cases {
		h.checkErrorCase(t, l, c)
	}
}

// cleanedLogCases copies the table, checkpoints the copy at a version c in
// the middle of its history (delta-rs create_checkpoint) and deletes the
// commit files before c, as log cleanup does: a range starting before c
// must fail, one starting at c must be read.
func (h *deltaHistory) cleanedLogCases(t *testing.T, l *lab, latest int64) []cdfErrorCase {
	t.Helper()
	c := latest / 2
	dst := filepath.Join(t.TempDir(), "cleaned")
	if err := os.CopyFS(dst, os.DirFS(h.path)); err != nil {
		t.Fatal(err)
	}
	if _, err := l.py.Python(l.ctx, "from deltalake import DeltaTable\nDeltaTable(args['path'], version=args['version']).create_checkpoint()\nresult = None",
		map[string]any{"path": dst, "version": c}); err != nil {
		t.Fatalf("delta-rs create_checkpoint at version %d: %v", c, err)
	}
	if _, err := os.Stat(filepath.Join(dst, "_delta_log", fmt.Sprintf("%020d.checkpoint.parquet", c))); err != nil {
		t.Fatalf("delta-rs wrote no checkpoint of version %d: %v", c, err)
	}
	for v := int64(0); v < c; v++ {
		if err := os.Remove(filepath.Join(dst, "_delta_log", fmt.Sprintf("%020d.json", v))); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("copy with a cleaned-up log: checkpoint at version %d, commits 0 to %d deleted", c, c-1)
	s := strconv.FormatInt(c-1, 10)
	return []cdfErrorCase{
		{name: "start before the oldest retained commit", path: dst, start: atV(c - 1), fault: s},
		{name: "start at the oldest retained commit", path: dst, start: atV(c), end: atV(latest)},
	}
}

func (h *deltaHistory) checkErrorCase(t *testing.T, l *lab, c cdfErrorCase) {
	t.Helper()
	what := fmt.Sprintf("%s [%s, %s]", c.name, c.start, c.end)
	args := c.floeArgs()
	repro := "floe " + strings.Join(args, " ")
	var fl, sp, rs cdfOutcome
	if rows, err := l.floe.Rows(l.ctx, args...); err != nil {
		var fe *interop.FloeError
		if !errors.As(err, &fe) {
			t.Fatalf("%s: %v", what, err)
		}
		fl.err = fe.Stderr
	} else {
		if err := interop.FloeToRowJSON(rows, map[string]string{"ts": "timestamptz", "_commit_timestamp": "timestamptz"}); err != nil {
			t.Fatal(err)
		}
		fl.rows = mustSelectIfAny(t, rows, cdfColumns)
	}
	if rows, err := l.spark.SQL(l.ctx, l.sess, c.sparkQuery()); err != nil {
		if !errors.Is(err, interop.ErrEngine) {
			t.Fatalf("%s: delta-spark: %v", what, err)
		}
		sp.err = referenceMessage(err)
	} else {
		sp.rows = mustSelectIfAny(t, rows, cdfColumns)
	}
	raw, err := l.py.Python(l.ctx, "from deltalake import DeltaTable\nresult = DeltaTable(args['path']).load_cdf(**args['kw'])", c.rsArgs())
	if err != nil {
		if !errors.Is(err, interop.ErrEngine) {
			t.Fatalf("%s: delta-rs: %v", what, err)
		}
		rs.err = err.Error()
	} else {
		tbl, err := rowjson.Decode(raw)
		if err != nil {
			t.Fatal(err)
		}
		rs.rows = mustSelectIfAny(t, tbl, cdfColumns)
	}
	t.Logf("%s: floe %s; delta-spark %s; delta-rs %s", what, fl, sp, rs)
	switch {
	case fl.err != "" && sp.err != "":
		if !strings.Contains(fl.err, c.fault) {
			t.Errorf("%s: floe's message does not name %s: %s; reproduce with: %s", what, c.fault, fl.err, repro)
		}
	case fl.err != "":
		t.Errorf("%s: floe fails where delta-spark answers %d rows: %s; reproduce with: %s", what, len(sp.rows.Rows), fl.err, repro)
	case sp.err != "":
		t.Errorf("%s: floe answers %d rows where delta-spark fails (%s); reproduce with: %s", what, len(fl.rows.Rows), sp.err, repro)
	default:
		if d := diffRows(sp.rows, fl.rows); d != "" {
			t.Errorf("%s: floe's changes differ from delta-spark's:\n%sreproduce with: %s", what, d, repro)
		}
	}
	var rsDiff string
	switch {
	case (rs.err != "") != (sp.err != ""):
		rsDiff = fmt.Sprintf("delta-rs %s, delta-spark %s", rs, sp)
	case rs.err == "":
		if d := diffRows(sp.rows, rs.rows); d != "" {
			rsDiff = "delta-rs's rows differ from delta-spark's:\n" + d
		}
	}
	switch {
	case rsDiff != "" && c.rsDiffers == "":
		t.Errorf("%s: %s", what, rsDiff)
	case rsDiff != "":
		t.Logf("%s: delta-rs differs from delta-spark (%s): %s", what, c.rsDiffers, rsDiff)
	case c.rsDiffers != "":
		t.Logf("%s: delta-rs now agrees with delta-spark (the exclusion %q can go)", what, c.rsDiffers)
	}
}
