//go:build interop

package interop_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/floedata/floe/internal/rowjson"
	"github.com/floedata/floe/interop"
)

// clOptions is one call of a changelog: the options of Iceberg's
// create_changelog_view and the matching flags of floe changelog.
type clOptions struct {
	StartID, EndID *int64 // options start-snapshot-id, end-snapshot-id
	StartTS, EndTS *int64 // options start-timestamp, end-timestamp (epoch ms)
	IDs            []string
	ComputeUpdates *bool
	Net            bool
	// PerKey is floe's --per-key view (latest or net), which the reference
	// lacks; only the apply check uses it.
	PerKey string
}

func (o clOptions) String() string {
	var parts []string
	add := func(k string, v *int64) {
		if v != nil {
			parts = append(parts, fmt.Sprintf("%s=%d", k, *v))
		}
	}
	add("start-snapshot-id", o.StartID)
	add("end-snapshot-id", o.EndID)
	add("start-timestamp", o.StartTS)
	add("end-timestamp", o.EndTS)
	if o.IDs != nil {
		parts = append(parts, "identifier_columns=["+strings.Join(o.IDs, ",")+"]")
	}
	if o.ComputeUpdates != nil {
		parts = append(parts, fmt.Sprintf("compute_updates=%t", *o.ComputeUpdates))
	}
	if o.Net {
		parts = append(parts, "net_changes=true")
	}
	if o.PerKey != "" {
		parts = append(parts, "per-key="+o.PerKey)
	}
	if len(parts) == 0 {
		return "{}"
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// sparkCall is the CALL statement of create_changelog_view for table
// ("ns.t") creating the temporary view view.
func (o clOptions) sparkCall(table, view string) string {
	args := []string{"table => " + sqlLit(table), "changelog_view => " + sqlLit(view)}
	var opts []string
	add := func(k string, v *int64) {
		if v != nil {
			opts = append(opts, sqlLit(k), sqlLit(strconv.FormatInt(*v, 10)))
		}
	}
	add("start-snapshot-id", o.StartID)
	add("end-snapshot-id", o.EndID)
	add("start-timestamp", o.StartTS)
	add("end-timestamp", o.EndTS)
	if len(opts) > 0 {
		args = append(args, "options => map("+strings.Join(opts, ", ")+")")
	}
	if o.IDs != nil {
		var ids []string
		for _, c := range o.IDs {
			ids = append(ids, sqlLit(c))
		}
		args = append(args, "identifier_columns => array("+strings.Join(ids, ", ")+")")
	}
	if o.ComputeUpdates != nil {
		args = append(args, fmt.Sprintf("compute_updates => %t", *o.ComputeUpdates))
	}
	if o.Net {
		args = append(args, "net_changes => true")
	}
	return "CALL floe.system.create_changelog_view(" + strings.Join(args, ", ") + ")"
}

// floeArgs are the arguments of floe changelog for table with these options.
func (o clOptions) floeArgs(table string) []string {
	args := []string{"changelog", table}
	add := func(flag string, v *int64) {
		if v != nil {
			args = append(args, flag, strconv.FormatInt(*v, 10))
		}
	}
	add("--start-snapshot-id", o.StartID)
	add("--end-snapshot-id", o.EndID)
	add("--start-timestamp", o.StartTS)
	add("--end-timestamp", o.EndTS)
	if o.IDs != nil {
		args = append(args, "--identifier-columns", strings.Join(o.IDs, ","))
	}
	if o.ComputeUpdates != nil {
		args = append(args, fmt.Sprintf("--compute-updates=%t", *o.ComputeUpdates))
	}
	if o.Net {
		args = append(args, "--net-changes")
	}
	if o.PerKey != "" {
		args = append(args, "--per-key", o.PerKey)
	}
	return args
}

// sparkChangelog runs create_changelog_view and reads the whole view.
func (l *lab) sparkChangelog(table string, o clOptions) (*rowjson.Table, error) {
	const view = "floe_interop_changes"
	if _, err := l.spark.SQL(l.ctx, l.sess, o.sparkCall(table, view)); err != nil {
		return nil, err
	}
	return l.spark.SQL(l.ctx, l.sess, "SELECT * FROM "+view)
}

// floeChangelog runs floe changelog and returns its rows.
func (l *lab) floeChangelog(table string, o clOptions) (*rowjson.Table, error) {
	return l.floe.TableRows(l.ctx, table, o.floeArgs(table)...)
}

// refusal is the reference's answer for any range that reaches a snapshot with
// delete manifests (position deletes, deletion vectors, equality deletes).
const refusal = "Delete files are currently not supported in changelog scans"

// outcome is how one changelog comparison ended.
type outcome int

const (
	sameChanges outcome = iota // both produced the same rows
	sameError                  // both failed; floe quotes the reference's message
	refused                    // the reference refused delete files; floe answered
	disagree                   // reported with t.Errorf
)

// tally counts comparison outcomes for the test log and for a check that a
// randomized run compared something.
type tally map[outcome]int

func (c tally) String() string {
	return fmt.Sprintf("%d with the same rows, %d with the same error, %d refused by the reference (delete files), %d disagreements",
		c[sameChanges], c[sameError], c[refused], c[disagree])
}

// compareChangelog runs one option set on Spark and floe and requires the
// same outcome: the same rows (as multisets, metadata columns included), or
// both failing with floe's message containing the reference's. When the
// reference refuses delete files, floe must succeed; its rows are returned
// for the apply check. A disagreement is reported with t.Errorf (so one run
// shows them all) and returned as disagree.
func (l *lab) compareChangelog(t *testing.T, table string, o clOptions) (outcome, *rowjson.Table) {
	t.Helper()
	want, sparkErr := l.sparkChangelog(table, o)
	if sparkErr != nil && !errors.Is(sparkErr, interop.ErrEngine) {
		t.Fatalf("changelog %s: Spark: %v", o, sparkErr)
	}
	got, floeErr := l.floeChangelog(table, o)
	var fe *interop.FloeError
	if floeErr != nil && !errors.As(floeErr, &fe) {
		t.Fatalf("changelog %s: floe: %v", o, floeErr)
	}
	repro := "reproduce with: floe " + strings.Join(o.floeArgs(table), " ") + "\n  and: " + o.sparkCall(table, "v")
	switch {
	case sparkErr != nil && strings.Contains(referenceMessage(sparkErr), refusal):
		if floeErr != nil {
			t.Errorf("changelog %s: the reference refuses delete files, and floe fails: %v\n%s", o, floeErr, repro)
			return disagree, nil
		}
		return refused, got
	case sparkErr != nil && floeErr != nil:
		msg := referenceMessage(sparkErr)
		if !strings.Contains(fe.Stderr, msg) {
			t.Errorf("changelog %s: both fail, but floe's message does not quote the reference's\n  reference: %s\n  floe:      %s\n%s",
				o, msg, fe.Stderr, repro)
			return disagree, nil
		}
		return sameError, nil
	case sparkErr != nil:
		t.Errorf("changelog %s: the reference fails (%s) but floe returns %d rows\n%s", o, referenceMessage(sparkErr), len(got.Rows), repro)
		return disagree, nil
	case floeErr != nil:
		t.Errorf("changelog %s: the reference returns %d rows but floe fails: %v\n%s", o, len(want.Rows), floeErr, repro)
		return disagree, nil
	}
	if d := diffRows(want, got); d != "" {
		t.Errorf("changelog %s: floe differs from create_changelog_view:\n%s%s", o, d, repro)
		return disagree, nil
	}
	return sameChanges, got
}

// shapes are every combination of the options that shape a changelog:
// identifier columns (none, one, two), compute_updates (unset, true, false)
// and net_changes, accepted or not by the reference.
func shapes(idSets [][]string) []clOptions {
	var out []clOptions
	for _, ids := range idSets {
		for _, cu := range []*bool{nil, boolp(true), boolp(false)} {
			for _, net := range []bool{false, true} {
				out = append(out, clOptions{IDs: ids, ComputeUpdates: cu, Net: net})
			}
		}
	}
	return out
}

// withShape copies the range of r and the shape of s.
func withShape(r, s clOptions) clOptions {
	r.IDs, r.ComputeUpdates, r.Net, r.PerKey = s.IDs, s.ComputeUpdates, s.Net, s.PerKey
	return r
}

// ranges returns range options over a main-branch ancestry (oldest first),
// by snapshot id and by timestamp, valid and invalid, chosen with r.
func ranges(r *rand.Rand, main []interop.FloeSnapshot) []clOptions {
	n := len(main)
	pick := func() int { return r.IntN(n) }
	pair := func() (int, int) {
		i, j := pick(), pick()
		for n > 1 && i == j {
			j = pick()
		}
		if i > j {
			i, j = j, i
		}
		return i, j
	}
	id := func(k int) *int64 { return i64(main[k].SnapshotID) }
	ts := func(k int, delta int64) *int64 { return i64(main[k].TimestampMs + delta) }
	i, j := pair()
	a, b := pair()
	out := []clOptions{
		{},                             // every change
		{StartID: id(pick())},          // from a snapshot (exclusive)
		{EndID: id(pick())},            // up to a snapshot (inclusive)
		{StartID: id(i), EndID: id(j)}, // between two
		{StartID: id(a), EndID: id(a)}, // empty
		{StartTS: ts(pick(), 0)},       // a snapshot exactly at the start time is excluded
		{StartTS: ts(pick(), 1)},       // just after a snapshot
		{StartTS: ts(0, -1)},           // before the first snapshot
		{StartTS: ts(n-1, 1)},          // after the last one: empty
		{EndTS: ts(pick(), 0)},         // a snapshot exactly at the end time is included
		{EndTS: ts(pick(), -1)},        // just before a snapshot
		{StartTS: ts(i, 0), EndTS: ts(j, 0)},
		{StartID: id(a), EndTS: ts(b, 0)}, // mixed
		{StartTS: ts(a, -1), EndID: id(b)},
	}
	if n > 1 {
		out = append(out,
			clOptions{StartID: id(j), EndID: id(i)},              // start after end: not an ancestor
			clOptions{StartTS: ts(j, 0), EndTS: ts(i, 0)},        // start-timestamp after end-timestamp
			clOptions{StartTS: ts(i, 0), EndTS: ts(i, 0)},        // equal timestamps
			clOptions{StartID: id(i), StartTS: ts(i, 0)},         // both starts
			clOptions{EndID: id(j), EndTS: ts(j, 0)},             // both ends
			clOptions{EndID: i64(1234567890123)},                 // unknown end
			clOptions{StartID: i64(1234567890123), EndID: id(j)}, // unknown start
		)
	}
	return out
}

// applyCheck requires floe's changelog with o between start (exclusive; nil
// for the beginning of history) and end to turn the reference's read of start
// into the reference's read of end. read returns the reference's rows at a
// snapshot. A disagreement is reported with t.Errorf.
func (l *lab) applyCheck(t *testing.T, table string, start *int64, end int64, o clOptions, read func(int64) *rowjson.Table) {
	t.Helper()
	o.StartID, o.EndID = start, &end
	repro := "reproduce with: floe " + strings.Join(o.floeArgs(table), " ")
	got, err := l.floeChangelog(table, o)
	if err != nil {
		t.Errorf("changelog %s: %v\n%s", o, err, repro)
		return
	}
	before := &rowjson.Table{Columns: read(end).Columns, Rows: [][]any{}}
	if start != nil {
		before = read(*start)
	}
	applied, err := applyChanges(before, got)
	if err != nil {
		t.Errorf("changelog %s applied to the reference's read of the start: %v\n%s", o, err, repro)
		return
	}
	if d := diffRows(read(end), applied); d != "" {
		t.Errorf("changelog %s applied to the reference's read of the start differs from its read of the end:\n%s%s", o, d, repro)
	}
}

// applyShapes are the shapes the apply check draws from: every accepted
// combination, floe's per-key views included.
func applyShapes(id string) []clOptions {
	return []clOptions{
		{},
		{Net: true},
		{IDs: []string{id}},
		{IDs: []string{id}, ComputeUpdates: boolp(false)},
		{IDs: []string{id}, ComputeUpdates: boolp(false), Net: true},
		{IDs: []string{id}, PerKey: "net"},
	}
}
