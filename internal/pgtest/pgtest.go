// Package pgtest starts a throwaway PostgreSQL server for tests: a fresh
// cluster (initdb) in a temporary folder, listening on 127.0.0.1 on a free
// port, stopped and removed when the test ends. It uses Debian's
// postgresql package (/usr/lib/postgresql/*/bin, installed by
// .ci/postgres.sh) or initdb and pg_ctl on PATH. PostgreSQL refuses to run
// as root, so as root the server runs as the postgres user (runuser).
//
// Without PostgreSQL the test is skipped with a message saying how to get
// it, unless FLOE_POSTGRES_REQUIRED=1, which makes that a failure (CI).
package pgtest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
	"time"
)

// EnvRequired makes a missing PostgreSQL a test failure instead of a skip.
const EnvRequired = "FLOE_POSTGRES_REQUIRED"

// Server is a running throwaway server.
type Server struct {
	Port int
	// DSN is a postgres:// URL of the server's postgres database for its
	// superuser, with trust authentication.
	DSN  string
	User string
}

// URL returns a postgres:// URL of database db with the given scheme
// ("postgresql", "postgresql+psycopg2", ...).
func (s *Server) URL(scheme, db string) string {
	return fmt.Sprintf("%s://%s@127.0.0.1:%d/%s?sslmode=disable", scheme, s.User, s.Port, db)
}

func bins() (initdb, pgctl string, ok bool) {
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(matches, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(matches[i]))))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(matches[j]))))
		return vi < vj
	})
	if len(matches) > 0 {
		dir := filepath.Dir(matches[len(matches)-1])
		return filepath.Join(dir, "initdb"), filepath.Join(dir, "pg_ctl"), true
	}
	i, err1 := exec.LookPath("initdb")
	p, err2 := exec.LookPath("pg_ctl")
	return i, p, err1 == nil && err2 == nil
}

func skipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv(EnvRequired) == "1" {
		t.Fatalf("%s (%s=1)", msg, EnvRequired)
	}
	t.Skipf("%s; install it with `bash .ci/postgres.sh` (Debian's postgresql package)", msg)
}

// Start starts a server for the test t and stops it when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	initdb, pgctl, ok := bins()
	if !ok {
		skipOrFail(t, "PostgreSQL not found (no /usr/lib/postgresql/*/bin/initdb, no initdb on PATH)")
	}
	// As root the server runs as the postgres user, who must be able to
	// reach the folder: a fresh one under the system's temporary folder,
	// not t.TempDir (whose parents are private to root).
	var run []string
	var uid, gid = -1, -1
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			skipOrFail(t, "running as root and there is no postgres user to run PostgreSQL as")
		}
		uid, _ = strconv.Atoi(u.Uid)
		gid, _ = strconv.Atoi(u.Gid)
		rp, err := exec.LookPath("runuser")
		if err != nil {
			skipOrFail(t, "running as root and runuser is missing")
		}
		run = []string{rp, "-u", "postgres", "--"}
	}
	dir, err := os.MkdirTemp("", "floe-pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if uid >= 0 {
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	data := filepath.Join(dir, "data")
	cmd := func(name string, args ...string) *exec.Cmd {
		all := append(append(append([]string{}, run...), name), args...)
		c := exec.Command(all[0], all[1:]...)
		c.Dir = dir
		c.Env = append(os.Environ(), "LC_ALL=C.UTF-8", "LANG=C.UTF-8")
		return c
	}
	runCmd := func(c *exec.Cmd) {
		t.Helper()
		var out bytes.Buffer
		c.Stdout, c.Stderr = &out, &out
		if err := c.Run(); err != nil {
			t.Fatalf("%v: %v\n%s", c.Args, err, out.String())
		}
	}
	const superuser = "floe"
	runCmd(cmd(initdb, "-D", data, "-U", superuser, "--auth=trust", "-E", "UTF8", "--no-sync"))
	port := freePort(t)
	opts := fmt.Sprintf("-h 127.0.0.1 -p %d -k %s -c fsync=off", port, dir)
	runCmd(cmd(pgctl, "-D", data, "-o", opts, "-l", filepath.Join(dir, "server.log"), "-w", "-t", "60", "start"))
	t.Cleanup(func() {
		c := cmd(pgctl, "-D", data, "-m", "fast", "-w", "-t", "60", "stop")
		if out, err := c.CombinedOutput(); err != nil {
			t.Errorf("stop PostgreSQL: %v\n%s", err, out)
		}
	})
	s := &Server{Port: port, User: superuser}
	s.DSN = s.URL("postgres", "postgres")
	waitReady(t, port)
	return s
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func waitReady(t testing.TB, port int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("PostgreSQL on port %d did not accept connections: %v", port, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
