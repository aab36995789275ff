package commit_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/internal/commit"
	"github.com/floedata/floe/internal/faultcat"
	"github.com/floedata/floe/internal/tabletest"
)

// TestClassifyRealSQLConflict: a commit on a stale base of the embedded
// catalog (iceberg-go's SQL catalog) fails with the error the adapter must
// call a conflict.
func TestClassifyRealSQLConflict(t *testing.T) {
	e := tabletest.New(t)
	if _, err := e.Create("t", "id long not null", "", nil, nil); err != nil {
		t.Fatal(err)
	}
	appendRows(t, e, "t", 1)
	base := e.Load("t")
	appendRows(t, e, "t", 2) // the table moves on
	tx := base.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	_, err := tx.Commit(e.Ctx)
	if err == nil {
		t.Fatal("a commit on a stale base succeeded")
	}
	if got := commit.Classify(e.Cat.Kind(), err); got != commit.Conflict {
		t.Fatalf("%q from the embedded catalog classified %v, want conflict", err, got)
	}
}

// TestClassify checks each catalog kind's adapter on the errors its
// iceberg-go client reports.
func TestClassify(t *testing.T) {
	requirement := errors.New("requirement failed: branch main has changed: expected id 1, found 2")
	moved := fmt.Errorf("%w: table ns.t metadata-location moved underneath us", table.ErrCommitFailed)
	for _, c := range []struct {
		kinds []string
		err   error
		want  commit.Class
	}{
		{[]string{"embedded", "sql", "hadoop", "glue", "hive"}, requirement, commit.Conflict},
		{[]string{"embedded", "sql"}, fmt.Errorf("commit: %w", errors.New("Requirement failed: current schema id has changed: expected 0, found 1")), commit.Conflict},
		{[]string{"embedded", "sql", "hadoop", "glue", "hive", "rest"}, moved, commit.Conflict},
		{[]string{"embedded", "sql"}, fmt.Errorf("create: %w", icecat.ErrTableAlreadyExists), commit.Conflict},
		{[]string{"embedded", "sql", "rest"}, fmt.Errorf("load: %w", icecat.ErrNoSuchTable), commit.Refused},
		{[]string{"embedded", "sql"}, errors.New("error updating table information: database is locked (5)"), commit.Unknown},
		{[]string{"embedded", "sql", "rest", "hive"}, fmt.Errorf("commit: %w", context.Canceled), commit.Unknown},
		{[]string{"embedded", "rest"}, fmt.Errorf("%w: requirement failed", context.DeadlineExceeded), commit.Unknown},
		{[]string{"rest"}, rest.ErrCommitFailed, commit.Conflict},
		{[]string{"rest"}, faultcat.ErrGatewayTimeout, commit.Unknown},
		{[]string{"rest"}, faultcat.ErrBadGateway, commit.Unknown},
		{[]string{"rest"}, faultcat.ErrReset, commit.Unknown},
		{[]string{"rest"}, faultcat.ErrEOF, commit.Unknown},
		{[]string{"rest"}, faultcat.ErrTimeout, commit.Unknown},
		{[]string{"rest"}, fmt.Errorf("%w: bad", rest.ErrBadRequest), commit.Refused},
		{[]string{"rest"}, fmt.Errorf("%w: no", rest.ErrForbidden), commit.Refused},
		// REST answers conflicts with 409; a message is not an answer.
		{[]string{"rest"}, requirement, commit.Unknown},
		{[]string{"unknown-kind"}, requirement, commit.Unknown},
	} {
		for _, k := range c.kinds {
			if got := commit.Classify(k, c.err); got != c.want {
				t.Errorf("%s: %q classified %v, want %v", k, c.err, got, c.want)
			}
		}
	}
}

// TestClassifyRESTAnswers runs iceberg-go's REST client against a server
// that answers commits with each status (and drops the connection), and
// checks what the rest adapter makes of the errors the client reports:
// what the REST fault suite in interop relies on.
func TestClassifyRESTAnswers(t *testing.T) {
	status := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/config" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"defaults":{},"overrides":{}}`)
			return
		}
		switch status {
		case -1: // drop the connection without an answer
			hj, ok := w.(http.Hijacker)
			if !ok {
				t.Error("no hijacker")
				return
			}
			conn, _, err := hj.Hijack()
			if err == nil {
				if tc, ok := conn.(*net.TCPConn); ok {
					tc.SetLinger(0) // a reset, not a clean close
				}
				conn.Close()
			}
			return
		case 502, 504:
			// A proxy's answer: not JSON.
			w.WriteHeader(status)
			fmt.Fprint(w, "<html>gateway</html>")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"message":"injected","type":"X","code":%d}}`, status)
	}))
	defer srv.Close()
	ctx := context.Background()
	cat, err := rest.NewCatalog(ctx, "rest", srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		status int
		want   commit.Class
	}{
		{409, commit.Conflict},
		{500, commit.Unknown}, {502, commit.Unknown}, {503, commit.Unknown}, {504, commit.Unknown},
		{-1, commit.Unknown},
		{400, commit.Refused}, {401, commit.Refused}, {403, commit.Refused}, {404, commit.Refused},
	} {
		status = c.status
		_, _, err := cat.CommitTable(ctx, table.Identifier{"ns", "t"}, nil, []table.Update{table.NewSetPropertiesUpdate(iceberg.Properties{"a": "b"})})
		if err == nil {
			t.Fatalf("status %d: no error", c.status)
		}
		if got := commit.Classify("rest", err); got != c.want {
			t.Errorf("status %d: %q classified %v, want %v", c.status, err, got, c.want)
		}
		if c.status == -1 && !strings.Contains(err.Error(), "EOF") && !strings.Contains(err.Error(), "reset") {
			t.Logf("dropped connection reported as %q", err)
		}
	}
}
