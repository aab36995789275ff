//go:build interop

package interop

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// RESTServer is Apache Iceberg's REST catalog server
// (org.apache.iceberg.rest.RESTCatalogServer) running on a local port, backed
// by a JdbcCatalog on a SQLite file and a local warehouse.
type RESTServer struct {
	// URI is the catalog's base URI, http://127.0.0.1:<port>/.
	URI string
	// Warehouse is the server's warehouse location (file:// URI).
	Warehouse string
	// CatalogDB is the SQLite file of the server's backing JdbcCatalog.
	CatalogDB string

	cmd     *exec.Cmd
	logs    *tailBuffer
	exited  chan struct{}
	waitErr error
}

// RESTOptions configures StartREST.
type RESTOptions struct {
	// Dir holds the server's catalog file and warehouse. Required.
	Dir string
	// Env adds CATALOG_* variables (CATALOG_FOO__BAR=x sets property foo-bar,
	// CATALOG_FOO_BAR=x sets foo.bar), overriding the defaults.
	Env map[string]string
}

// StartREST starts the REST server on a free loopback port with
// CATALOG_URI=jdbc:sqlite:<Dir>/rest-catalog.db, CATALOG_WAREHOUSE=file://<Dir>/warehouse,
// CATALOG_JDBC_SCHEMA__VERSION=V1 and CATALOG_REST_PORT, and returns once
// GET /v1/config answers 200. A server that exits or does not answer within
// ctx's deadline (or 2 minutes) is an ErrServerStart error with its log tail.
// The caller must Close it.
func StartREST(ctx context.Context, e *Engines, opts RESTOptions) (*RESTServer, error) {
	if opts.Dir == "" {
		return nil, fmt.Errorf("interop: StartREST: RESTOptions.Dir is required")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	wh := filepath.Join(dir, "warehouse")
	if err := os.MkdirAll(wh, 0o755); err != nil {
		return nil, err
	}
	var lastErr error
	// A port found free can be taken before the server binds it: try again
	// with another port, a bounded number of times.
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		s, err := startRESTOnce(ctx, e, dir, wh, port, opts.Env)
		if err == nil {
			return s, nil
		}
		lastErr = err
		if ctx.Err() != nil || !strings.Contains(err.Error(), "Address already in use") {
			break
		}
	}
	return nil, lastErr
}

func startRESTOnce(ctx context.Context, e *Engines, dir, wh string, port int, extra map[string]string) (*RESTServer, error) {
	s := &RESTServer{
		URI:       fmt.Sprintf("http://127.0.0.1:%d/", port),
		Warehouse: FileURI(wh),
		CatalogDB: filepath.Join(dir, "rest-catalog.db"),
		logs:      newTailBuffer(256 << 10),
		exited:    make(chan struct{}),
	}
	env := map[string]string{
		"CATALOG_URI":                  "jdbc:sqlite:" + s.CatalogDB,
		"CATALOG_WAREHOUSE":            s.Warehouse,
		"CATALOG_JDBC_SCHEMA__VERSION": "V1",
		"CATALOG_REST_PORT":            strconv.Itoa(port),
	}
	for k, v := range extra {
		env[k] = v
	}
	cmd := exec.Command(e.Java(), "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
		"-Duser.timezone=UTC", "-jar", e.RESTJar)
	cmd.Dir = dir
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout = s.logs
	cmd.Stderr = s.logs
	if os.Getenv(VerboseEnv) != "" {
		cmd.Stderr = io.MultiWriter(s.logs, os.Stderr)
		cmd.Stdout = cmd.Stderr
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%w: REST server: %v", ErrServerStart, err)
	}
	s.cmd = cmd
	go func() {
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()

	deadline := time.Now().Add(2 * time.Minute)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	client := &http.Client{Timeout: 5 * time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URI+"v1/config", nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		select {
		case <-s.exited:
			return nil, fmt.Errorf("%w: REST server on port %d exited (%v); log tail:\n%s",
				ErrServerStart, port, s.waitErr, s.logs.Tail(4<<10))
		case <-ctx.Done():
			_ = s.Close()
			return nil, fmt.Errorf("%w: REST server on port %d: %v; log tail:\n%s",
				ErrServerStart, port, ctx.Err(), s.logs.Tail(4<<10))
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = s.Close()
			return nil, fmt.Errorf("%w: REST server on port %d did not answer /v1/config in time; log tail:\n%s",
				ErrServerStart, port, s.logs.Tail(4<<10))
		}
	}
}

// Logs returns the last n bytes of the server's output.
func (s *RESTServer) Logs(n int) string { return s.logs.Tail(n) }

// SparkConf returns Spark conf mounting this server as Iceberg catalog name.
func (s *RESTServer) SparkConf(name string) map[string]string { return SparkRESTCatalog(name, s.URI) }

// PyIceberg returns PyIceberg's RestCatalog spec for this server.
func (s *RESTServer) PyIceberg(name string) CatalogSpec { return PyIcebergRESTCatalog(name, s.URI) }

// Close stops the server (SIGTERM, then SIGKILL after 10 seconds) by its
// process group. Safe to call more than once.
func (s *RESTServer) Close() error {
	if s.cmd == nil || s.cmd.Process == nil {
		return nil
	}
	select {
	case <-s.exited:
		return nil
	default:
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
	}
	return nil
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
