package commit_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/internal/commit"
	"github.com/floedata/floe/internal/faultcat"
	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/internal/write"
	"github.com/floedata/floe/tableops"
)

// fast makes the table's retries quick (the table decides, as a user's
// would).
var fast = iceberg.Properties{commit.PropMinWaitMs: "1", commit.PropMaxWaitMs: "4"}

func newTable(t *testing.T) (*tabletest.Env, *faultcat.Injector) {
	t.Helper()
	e := tabletest.New(t)
	if _, err := e.Create("t", "id long not null", "", nil, fast); err != nil {
		t.Fatal(err)
	}
	appendRows(t, e, "t", 1, 2)
	inj := faultcat.New()
	e.Cat.Wrap(catalog.Wrap{Catalog: inj.Wrap})
	return e, inj
}

// appendOnce appends ids in one commit.Run and reports the files it wrote.
func appendOnce(e *tabletest.Env, o commit.Options, ids ...int64) (*commit.Outcome, []string, error) {
	data := make([][]any, len(ids))
	for i, id := range ids {
		data[i] = []any{id}
	}
	var written []string
	out, err := commit.Run(e.Ctx, e.Cat, table.Identifier{"ns", "t"}, o, func(ctx context.Context, tbl *table.Table, reuse *write.Reuse) (*write.Result, error) {
		res, err := write.Prepare(ctx, write.Request{Table: tbl, Inserts: tabletest.Seq(tabletest.ArrowSchema(tbl), data)(), Reuse: reuse})
		if res != nil {
			written = append(written, res.Written()...)
		}
		return res, err
	})
	return out, written, err
}

func rowsOf(t *testing.T, e *tabletest.Env) string {
	t.Helper()
	rows, err := e.Rows(e.Load("t"), scan.At{})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(rows, " ")
}

func exists(t *testing.T, paths []string) {
	t.Helper()
	for _, p := range paths {
		if _, err := os.Stat(strings.TrimPrefix(p, "file://")); err != nil {
			t.Errorf("file %s: %v", p, err)
		}
	}
}

// TestAnswerLostAfterCommit: the catalog commits, then the answer is lost
// (504, 502, a reset, a closed connection, a timeout): floe reloads, finds
// its commit by id and reports success, once, with every file in place.
func TestAnswerLostAfterCommit(t *testing.T) {
	for _, fault := range []error{faultcat.ErrGatewayTimeout, faultcat.ErrBadGateway, faultcat.ErrReset, faultcat.ErrEOF, faultcat.ErrTimeout} {
		e, inj := newTable(t)
		inj.Add(&faultcat.Rule{Op: faultcat.OpCommit, When: faultcat.After, Err: fault})
		out, written, err := appendOnce(e, commit.Options{}, 3)
		if err != nil {
			t.Fatalf("%v: %v", fault, err)
		}
		if !out.Committed || !out.AnswerLost || out.Attempts != 1 || out.SnapshotID == 0 {
			t.Fatalf("%v: outcome %+v, want committed with the answer lost, in 1 attempt", fault, out)
		}
		if got := rowsOf(t, e); got != "(1) (2) (3)" {
			t.Fatalf("%v: rows %s", fault, got)
		}
		exists(t, written)
		s := e.Load("t").Metadata().SnapshotByID(out.SnapshotID)
		if s == nil || s.Summary.Properties[commit.PropCommitID] != out.CommitID {
			t.Fatalf("%v: snapshot %d does not carry the commit id %s", fault, out.SnapshotID, out.CommitID)
		}
	}
}

// TestAnswerLostBeforeCommit: the error comes before the catalog saw the
// commit: floe reloads, does not find it, and commits it (once).
func TestAnswerLostBeforeCommit(t *testing.T) {
	e, inj := newTable(t)
	inj.Add(&faultcat.Rule{Op: faultcat.OpCommit, When: faultcat.Before, Err: faultcat.ErrGatewayTimeout})
	out, written, err := appendOnce(e, commit.Options{}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Committed || out.AnswerLost || out.Attempts != 2 {
		t.Fatalf("outcome %+v, want committed at the second attempt", out)
	}
	if got := rowsOf(t, e); got != "(1) (2) (3)" {
		t.Fatalf("rows %s", got)
	}
	// The first attempt's files go once the second landed: the first
	// asserted the head the second replaced, so it can never land.
	liveAndGone(t, written, out.Result.Written())
}

// liveAndGone checks that of written exactly the live files are on disk.
func liveAndGone(t *testing.T, written, live []string) {
	t.Helper()
	for _, p := range written {
		_, serr := os.Stat(strings.TrimPrefix(p, "file://"))
		isLive := false
		for _, l := range live {
			isLive = isLive || l == p
		}
		if isLive != (serr == nil) {
			t.Errorf("%s: live %t, on disk %v", p, isLive, serr)
		}
	}
}

// TestUnreachableAfterLostAnswer: the answer is lost and the catalog stays
// unreachable: ErrOutcomeUnknown naming the table, the commit id and what
// to do; every file stays; a rerun given the commit id finds the commit.
func TestUnreachableAfterLostAnswer(t *testing.T) {
	e, inj := newTable(t)
	inj.Add(&faultcat.Rule{Op: faultcat.OpCommit, When: faultcat.After, Err: faultcat.ErrReset})
	inj.Add(&faultcat.Rule{Op: faultcat.OpLoad, Nth: 2, Count: -1}) // the first load is the attempt's own
	out, written, err := appendOnce(e, commit.Options{}, 3)
	if !errors.Is(err, commit.ErrOutcomeUnknown) {
		t.Fatalf("got %v, %+v; want ErrOutcomeUnknown", out, err)
	}
	for _, want := range []string{"ns.t", "answer", "Rerun", commit.PropCommitID} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	exists(t, written)
	inj.Reset()
	if got := rowsOf(t, e); got != "(1) (2) (3)" {
		t.Fatalf("rows %s", got)
	}
	// The id is in the message; a rerun with it commits nothing again.
	id := e.Load("t").CurrentSnapshot().Summary.Properties[commit.PropCommitID]
	if id == "" || !strings.Contains(err.Error(), id) {
		t.Fatalf("the error does not name the commit id %q: %v", id, err)
	}
	out, _, err = appendOnce(e, commit.Options{CommitID: id}, 3)
	if err != nil || !out.Committed {
		t.Fatalf("rerun: %+v %v", out, err)
	}
	if got := rowsOf(t, e); got != "(1) (2) (3)" {
		t.Fatalf("rows after the rerun %s", got)
	}
}

// TestUnreachableBeforeCommit: the commit never reached the catalog and
// the catalog stays unreachable: ErrOutcomeUnknown, the table untouched,
// the files kept (they might have been committed, as far as floe knows).
func TestUnreachableBeforeCommit(t *testing.T) {
	e, inj := newTable(t)
	inj.Add(&faultcat.Rule{Op: faultcat.OpCommit, When: faultcat.Before, Err: faultcat.ErrTimeout})
	inj.Add(&faultcat.Rule{Op: faultcat.OpLoad, Nth: 2, Count: -1})
	_, written, err := appendOnce(e, commit.Options{}, 3)
	if !errors.Is(err, commit.ErrOutcomeUnknown) {
		t.Fatalf("got %v; want ErrOutcomeUnknown", err)
	}
	exists(t, written)
	inj.Reset()
	if got := rowsOf(t, e); got != "(1) (2)" {
		t.Fatalf("rows %s", got)
	}
}

// TestConflictAnswered: a conflict answered by the catalog is retried on
// the new state; the first attempt's files (and manifests) go.
func TestConflictAnswered(t *testing.T) {
	e, inj := newTable(t)
	inj.Add(&faultcat.Rule{Op: faultcat.OpCommit, When: faultcat.Before, Err: faultcat.ErrConflict})
	out, written, err := appendOnce(e, commit.Options{}, 3)
	if err != nil || out.Attempts != 2 {
		t.Fatalf("%+v %v", out, err)
	}
	if got := rowsOf(t, e); got != "(1) (2) (3)" {
		t.Fatalf("rows %s", got)
	}
	liveAndGone(t, written, out.Result.Written())
}

// TestCancelledDuringCommit: the context ends while the commit is at the
// catalog, which commits: floe resolves with a fresh context and reports
// the commit.
func TestCancelledDuringCommit(t *testing.T) {
	e, inj := newTable(t)
	ctx, cancel := context.WithCancel(e.Ctx)
	inj.Add(&faultcat.Rule{Op: faultcat.OpCommit, When: faultcat.After, Err: context.Canceled, Then: cancel})
	e.Ctx = ctx
	out, written, err := appendOnce(e, commit.Options{}, 3)
	e.Ctx = context.Background()
	if err != nil || !out.Committed || !out.AnswerLost {
		t.Fatalf("%+v %v", out, err)
	}
	exists(t, written)
	if got := rowsOf(t, e); got != "(1) (2) (3)" {
		t.Fatalf("rows %s", got)
	}
}

// TestRefChangeAnswerLost: a commit without a snapshot (a branch) is found
// by the floe.last-commit-id property.
func TestRefChangeAnswerLost(t *testing.T) {
	e, inj := newTable(t)
	inj.Add(&faultcat.Rule{Op: faultcat.OpCommit, When: faultcat.After, Err: faultcat.ErrGatewayTimeout})
	o, err := tableops.CreateBranch(e.Ctx, e.Cat, table.Identifier{"ns", "t"}, "audit", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !o.AnswerLost {
		t.Fatalf("%+v: the lost answer is not reported", o)
	}
	tbl := e.Load("t")
	if tbl.Properties()[commit.PropLastCommitID] != o.CommitID {
		t.Fatalf("property %s = %q, want %s", commit.PropLastCommitID, tbl.Properties()[commit.PropLastCommitID], o.CommitID)
	}
	found := false
	for n := range tbl.Metadata().Refs() {
		found = found || n == "audit"
	}
	if !found {
		t.Fatal("no branch audit")
	}
}

// TestRollbackConflictKeepsFiles: a rollback whose commit conflicts (or is
// otherwise abandoned) stages no snapshot of its own; the files of the
// snapshot it points the branch at are the table's and must stay (found by
// internal/faultsuite: they were taken for the attempt's own manifests).
func TestRollbackConflictKeepsFiles(t *testing.T) {
	for _, fault := range []*faultcat.Rule{
		{Op: faultcat.OpCommit, When: faultcat.Before, Err: faultcat.ErrConflict},
		{Op: faultcat.OpCommit, When: faultcat.Before, Err: faultcat.ErrGatewayTimeout},
	} {
		e, inj := newTable(t)
		first := e.Load("t").CurrentSnapshot()
		appendRows(t, e, "t", 3)
		inj.Add(fault)
		if _, err := tableops.Rollback(e.Ctx, e.Cat, table.Identifier{"ns", "t"}, "", first.SnapshotID); err != nil {
			t.Fatal(err)
		}
		inj.Reset()
		tbl := e.Load("t")
		if tbl.CurrentSnapshot().SnapshotID != first.SnapshotID {
			t.Fatal("not rolled back")
		}
		for _, s := range tbl.Metadata().Snapshots() {
			if _, err := os.Stat(strings.TrimPrefix(s.ManifestList, "file://")); err != nil {
				t.Fatalf("%v: snapshot %d lost its manifest list: %v", fault.Err, s.SnapshotID, err)
			}
			id := s.SnapshotID
			if _, err := e.Rows(tbl, scan.At{SnapshotID: &id}); err != nil {
				t.Fatalf("%v: snapshot %d does not read: %v", fault.Err, s.SnapshotID, err)
			}
		}
	}
}
