// Package sparkpush runs floe builds on Spark through Spark Connect: floe
// plans (which snapshots, which rows, which watermark), Spark computes and
// writes, floe publishes. It implements pushdown.Engine; programs wire it
// in with
//
//	pushdown.Open = sparkpush.Open
//
// Every build writes on a staging branch of its output, created at the
// output's head H for that build only, from a fresh Spark session whose
// snapshot-property settings (spark.sql.iceberg.snapshot-property.*,
// Iceberg 1.11) stamp floe's build id into every snapshot it writes. floe
// then publishes in one iceberg-go commit whose requirements are the table's
// UUID, the output's branch still at H and the staging branch at the head
// Spark left, and whose updates move the branch to that head, set the
// watermark properties and remove the staging branch: the data and the
// watermark land together or not at all, and Spark never moves a branch
// readers use. When the answer of a Spark statement is lost (the gRPC
// stream dropped), floe reloads the table and looks for its build id on the
// staging branch: found, it publishes; not found, nothing was committed to
// the output and the build fails saying so.
package sparkpush

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/apache/spark-connect-go/spark/sparkerrors"
	"github.com/apache/spark-connect-go/spark/sql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/pushdown"
)

// Errors of the Spark engine. Each is wrapped with the remote, the
// statement and what to do.
var (
	// ErrUnreachable: the Spark Connect server could not be reached.
	ErrUnreachable = errors.New("spark connect server unreachable")
	// ErrSpark: Spark refused a statement (AnalysisException,
	// ValidationException, ...); nothing was committed.
	ErrSpark = errors.New("spark error")
	// ErrCatalogMismatch: Spark's catalog is not floe's (a staging branch
	// floe created through Spark is not on the table floe loads).
	ErrCatalogMismatch = errors.New("spark's catalog is not floe's")
	// ErrOldIceberg: the Iceberg runtime on the Spark side does not stamp
	// snapshot properties (older than 1.11); floe cannot recognise its
	// commits and refuses to publish them.
	ErrOldIceberg = errors.New("spark's Iceberg runtime ignores snapshot properties")
	// ErrAnswerLost: the answer to a Spark statement was lost and its
	// commit is not on the staging branch; the output is unchanged.
	ErrAnswerLost = errors.New("spark statement answer lost")
)

// Engine is the Spark engine of one command or pipeline run.
type Engine struct {
	s       pushdown.Settings
	cat     *catalog.Catalog
	catName string            // the catalog's name on the Spark side
	mount   map[string]string // session settings mounting floe's catalog (nil: the server's own)
	log     *slog.Logger
	// LostWait bounds how long floe waits for the commit of a statement
	// whose answer was lost to appear on the staging branch.
	LostWait time.Duration
	appID    string
	// noStamp skips the snapshot-property settings (tests: an Iceberg
	// runtime that ignores them).
	noStamp bool
}

// EnvLostWait overrides how long floe waits for the commit of a Spark
// statement whose answer was lost (a Go duration; default 60s).
const EnvLostWait = "FLOE_SPARK_LOST_WAIT"

var _ pushdown.Engine = (*Engine)(nil)

// Open connects to the Spark Connect server s names and prepares the
// catalog mount for cat. It fails with ErrUnreachable when the server does
// not answer.
func Open(ctx context.Context, s pushdown.Settings, cat *catalog.Catalog) (pushdown.Engine, error) {
	return OpenEngine(ctx, s, cat)
}

// OpenEngine is Open returning the concrete engine.
func OpenEngine(ctx context.Context, s pushdown.Settings, cat *catalog.Catalog) (*Engine, error) {
	s = s.WithDefaults()
	if s.Remote == "" {
		return nil, fmt.Errorf("%w: pass --spark-remote sc://HOST:PORT or set %s", pushdown.ErrNoRemote, pushdown.EnvRemote)
	}
	if !strings.HasPrefix(s.Remote, "sc://") {
		return nil, fmt.Errorf("--spark-remote %q: want sc://HOST:PORT", s.Remote)
	}
	e := &Engine{s: s, cat: cat, log: s.Logger, LostWait: 60 * time.Second}
	if d, err := time.ParseDuration(os.Getenv(EnvLostWait)); err == nil && d >= 0 {
		e.LostWait = d
	}
	if e.log == nil {
		e.log = slog.Default()
	}
	if s.Catalog != "" {
		e.catName = s.Catalog
	} else {
		name, mount, err := MountConf(cat)
		if err != nil {
			return nil, err
		}
		e.catName, e.mount = name, mount
	}
	sess, err := e.session(ctx)
	if err != nil {
		return nil, err
	}
	e.appID = sess.appID
	return e, nil
}

// Remote is the server's address.
func (e *Engine) Remote() string { return e.s.Remote }

// Close releases nothing: Spark Connect sessions end server-side.
func (e *Engine) Close() error { return nil }

// CatalogName is the name floe's catalog has in Spark SQL.
func (e *Engine) CatalogName() string { return e.catName }

// MountConf returns the Spark session settings that mount cat in a Spark
// session under its own name: Iceberg's JdbcCatalog on the SQLite file of
// the embedded or a sql catalog (the JDBC catalog's name must be floe's:
// it keys the rows of the catalog tables), Iceberg's RESTCatalog on the
// REST catalog's settings.
func MountConf(cat *catalog.Catalog) (string, map[string]string, error) {
	name := cat.Name()
	p := "spark.sql.catalog." + name
	m := map[string]string{p: "org.apache.iceberg.spark.SparkCatalog", p + ".cache-enabled": "false"}
	props := cat.Properties()
	switch cat.Kind() {
	case "embedded":
		wh := cat.Warehouse()
		m[p+".type"] = "jdbc"
		m[p+".uri"] = "jdbc:sqlite:" + filepath.Join(wh, "catalog.db")
		m[p+".jdbc.schema-version"] = "V1"
		m[p+".warehouse"] = (&url.URL{Scheme: "file", Path: wh}).String()
	case "sql":
		uri := props.Get("uri", "")
		path := strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(uri, "sqlite://"), "sqlite:"), "file:")
		if i := strings.IndexByte(path, '?'); i >= 0 {
			path = path[:i]
		}
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		m[p+".type"] = "jdbc"
		m[p+".uri"] = "jdbc:sqlite:" + path
		m[p+".jdbc.schema-version"] = "V1"
		if wh := props.Get("warehouse", ""); wh != "" {
			m[p+".warehouse"] = wh
		}
	case "rest":
		m[p+".type"] = "rest"
		for k, v := range props {
			switch k {
			case "type", "name":
				continue
			}
			m[p+"."+k] = v
		}
	default:
		return "", nil, fmt.Errorf("the Spark engine cannot mount a %s catalog in Spark sessions; configure it on the Spark side and give its name in spark: {catalog: NAME} (docs/spark.md)", cat.Kind())
	}
	return name, m, nil
}

// session is one Spark Connect session with floe's catalog mounted.
type session struct {
	e     *Engine
	s     sql.SparkSession
	id    string
	appID string
}

// session opens a new Spark session (one per build: snapshot properties
// are session-wide).
func (e *Engine) session(ctx context.Context) (*session, error) {
	if err := probe(ctx, e.s.Remote); err != nil {
		return nil, err
	}
	s, err := sql.NewSessionBuilder().Remote(e.s.Remote).Build(ctx)
	if err != nil {
		return nil, e.unreachable(err)
	}
	ss := &session{e: e, s: s, id: sessionID(s)}
	conf := map[string]string{"spark.sql.sources.partitionOverwriteMode": "static"}
	for k, v := range e.mount {
		conf[k] = v
	}
	for k, v := range e.s.Conf {
		conf[k] = v
	}
	for k, v := range conf {
		if err := s.Config().Set(ctx, k, v); err != nil {
			return nil, fmt.Errorf("%w; nothing was committed (the session was being set up); rerun the build", e.wrap(err, "SET "+k))
		}
	}
	app, err := s.Config().Get(ctx, "spark.app.id")
	if err != nil {
		return nil, fmt.Errorf("%w; nothing was committed (the session was being set up); rerun the build", e.wrap(err, "SET spark.app.id"))
	}
	ss.appID = app
	return ss, nil
}

// sessionID reads the client-side session id (the spark-connect-go session
// does not export it).
func sessionID(s sql.SparkSession) string {
	v := reflect.ValueOf(s)
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() == reflect.Struct {
		if f := v.FieldByName("sessionId"); f.IsValid() && f.Kind() == reflect.String {
			return f.String()
		}
	}
	return ""
}

// probe checks that something listens at the remote's address, so that
// an absent server is a quick, clear error.
func probe(ctx context.Context, remote string) error {
	u, err := url.Parse(remote)
	if err != nil || u.Host == "" {
		return fmt.Errorf("--spark-remote %q: want sc://HOST:PORT", remote)
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "15002")
	}
	d := net.Dialer{Timeout: 10 * time.Second}
	c, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return fmt.Errorf("%w: %s: %v; start a Spark Connect server (docs/spark.md) or fix --spark-remote / %s, or run with --engine local",
			ErrUnreachable, remote, err, pushdown.EnvRemote)
	}
	return c.Close()
}

func (e *Engine) unreachable(err error) error {
	return fmt.Errorf("%w: %s: %v; start a Spark Connect server (docs/spark.md) or fix --spark-remote / %s, or run with --engine local",
		ErrUnreachable, e.s.Remote, err, pushdown.EnvRemote)
}

// exec runs one statement and returns its rows (nil for commands).
func (ss *session) exec(ctx context.Context, stmt string) ([][]any, error) {
	ss.e.log.Debug("spark: statement", "remote", ss.e.s.Remote, "session", ss.id, "sql", stmt)
	df, err := ss.s.Sql(ctx, stmt)
	if err != nil {
		return nil, ss.e.wrap(err, stmt)
	}
	rows, err := df.Collect(ctx)
	if err != nil {
		return nil, ss.e.wrap(err, stmt)
	}
	out := make([][]any, len(rows))
	for i, r := range rows {
		out[i] = r.Values()
	}
	return out, nil
}

func (ss *session) set(ctx context.Context, k, v string) error {
	if err := ss.s.Config().Set(ctx, k, v); err != nil {
		return ss.e.wrap(err, "SET "+k)
	}
	return nil
}

// StatementError is a failed Spark statement.
type StatementError struct {
	Remote    string
	Statement string
	// Reason is the Java exception class Spark reported
	// (org.apache.iceberg.exceptions.ValidationException, ...); "" when
	// the answer was lost.
	Reason string
	// Lost: no answer came back (the connection dropped, a timeout): the
	// statement may have run.
	Lost bool
	Err  error
}

func (s *StatementError) Error() string {
	stmt := s.Statement
	if len(stmt) > 300 {
		stmt = stmt[:300] + "..."
	}
	if s.Lost {
		return fmt.Sprintf("spark %s: the answer to %q was lost: %v", s.Remote, stmt, s.Err)
	}
	what := "fix the statement or the tables it names"
	switch {
	case strings.Contains(s.Reason, "ValidationException"), strings.Contains(s.Reason, "CommitFailedException"):
		what = "another writer changed the table during the statement; rerun the build"
	case strings.Contains(s.Reason, "NoSuchTable"), strings.Contains(s.Err.Error(), "TABLE_OR_VIEW_NOT_FOUND"):
		what = "Spark does not see the table: check that Spark's catalog is floe's (spark: {catalog: ...}, docs/spark.md)"
	}
	reason := s.Reason
	if reason == "" {
		reason = "error"
	}
	return fmt.Sprintf("spark %s: %s in %q: %s; nothing was committed; %s", s.Remote, reason, stmt, sparkMessage(s.Err), what)
}

// Unwrap returns ErrSpark or ErrAnswerLost, and the client's error.
func (s *StatementError) Unwrap() []error {
	if s.Lost {
		return []error{ErrAnswerLost, s.Err}
	}
	return []error{ErrSpark, s.Err}
}

func sparkMessage(err error) string {
	full := err.Error()
	if i := strings.Index(full, "USER_RAISED_EXCEPTION] floe: "); i >= 0 {
		// A check of floe's own failed in Spark (assert_true).
		msg := full[i+len("USER_RAISED_EXCEPTION] "):]
		if j := strings.IndexAny(msg, "\n"); j > 0 {
			msg = msg[:j]
		}
		if j := strings.Index(msg, " SQLSTATE"); j > 0 {
			msg = msg[:j]
		}
		return msg
	}
	var se *sparkerrors.SparkError
	if errors.As(err, &se) && se.Message != "" {
		msg := se.Message
		if i := strings.Index(msg, "\n"); i > 0 {
			msg = msg[:i]
		}
		return msg
	}
	msg := err.Error()
	if i := strings.Index(msg, "\n"); i > 0 {
		msg = msg[:i]
	}
	return msg
}

// wrap classifies a client error: Spark's own errors carry a reason
// (definite); transport errors leave the statement's outcome open.
func (e *Engine) wrap(err error, stmt string) error {
	se := &StatementError{Remote: e.s.Remote, Statement: stmt, Err: err}
	var spe *sparkerrors.SparkError
	if errors.As(err, &spe) {
		se.Reason = spe.Reason
		if spe.Reason == "" && spe.ErrorClass != "" {
			se.Reason = spe.ErrorClass
		}
		if se.Reason != "" || spe.Code == codes.InvalidArgument {
			return se
		}
		switch spe.Code {
		case codes.Unavailable, codes.Canceled, codes.DeadlineExceeded, codes.Aborted, codes.Unknown, codes.Internal:
			se.Lost = true
			return se
		}
		if spe.Message != "" {
			return se
		}
	}
	if st, ok := status.FromError(err); ok && st.Code() != codes.OK {
		switch st.Code() {
		case codes.Unavailable, codes.Canceled, codes.DeadlineExceeded, codes.Aborted, codes.Unknown, codes.Internal:
			se.Lost = true
			return se
		}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, sparkerrors.ConnectionError) || errors.Is(err, sparkerrors.RetriesExceeded) {
		se.Lost = true
		return se
	}
	msg := strings.ToLower(err.Error())
	for _, s := range []string{"connection reset", "transport is closing", "rst_stream", "eof", "connection refused", "broken pipe", "unavailable", "error reading from server"} {
		if strings.Contains(msg, s) {
			se.Lost = true
			return se
		}
	}
	return se
}
