//go:build interop

package interop

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/floedata/floe/internal/testdir"
)

// StartTimeout bounds how long SharedSpark and SharedPy wait for their engine.
const StartTimeout = 5 * time.Minute

var shared struct {
	mu     sync.Mutex
	dir    string
	dirErr error

	sparkOnce sync.Once
	spark     *Spark
	sparkErr  error

	pyOnce sync.Once
	py     *Py
	pyErr  error

	floeOnce sync.Once
	floe     string
	floeErr  error
}

// Main runs an interop test binary's tests and then stops the engines started
// by SharedSpark and SharedPy and removes their scratch directory. When the
// engines are not installed it prints SkipMessage once. Use it as
//
//	func TestMain(m *testing.M) { os.Exit(interop.Main(m)) }
func Main(m *testing.M) int {
	// Skip messages only show with -v: say once, always, why the suite
	// does nothing.
	if _, err := locateForModule(); err != nil && os.Getenv(RequiredEnv) == "" {
		fmt.Println(SkipMessage)
	}
	code := m.Run()
	if shared.spark != nil {
		if err := shared.spark.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "interop: stopping Spark: %v\n", err)
		}
	}
	if shared.py != nil {
		if err := shared.py.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "interop: stopping the Python worker: %v\n", err)
		}
	}
	if shared.dir != "" {
		_ = os.RemoveAll(shared.dir)
	}
	return code
}

// sharedDir is the per-process scratch directory of the shared engines.
func sharedDir() (string, error) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.dir == "" && shared.dirErr == nil {
		shared.dir, shared.dirErr = os.MkdirTemp("", "floe-interop-")
	}
	return shared.dir, shared.dirErr
}

// SharedSpark returns the test binary's Spark, starting it on first use (its
// startup, 10 to 30 seconds, is paid once). It skips tb like Require when the
// engines are absent and fails tb when Spark does not start; every later
// caller gets the same failure. Main stops it.
func SharedSpark(tb testing.TB) *Spark {
	tb.Helper()
	e := Require(tb)
	shared.sparkOnce.Do(func() {
		dir, err := sharedDir()
		if err != nil {
			shared.sparkErr = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
		defer cancel()
		sdir := filepath.Join(dir, "spark")
		if err := os.MkdirAll(sdir, 0o755); err != nil {
			shared.sparkErr = err
			return
		}
		shared.spark, shared.sparkErr = StartSpark(ctx, e, SparkOptions{Dir: sdir})
	})
	if shared.sparkErr != nil {
		tb.Fatalf("interop: Spark did not start: %v", shared.sparkErr)
	}
	return shared.spark
}

// SharedPy returns the test binary's PyIceberg/delta-rs worker, starting it on
// first use, with SharedSpark's skip and failure rules.
func SharedPy(tb testing.TB) *Py {
	tb.Helper()
	e := Require(tb)
	shared.pyOnce.Do(func() {
		dir, err := sharedDir()
		if err != nil {
			shared.pyErr = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
		defer cancel()
		shared.py, shared.pyErr = StartPy(ctx, e, dir)
	})
	if shared.pyErr != nil {
		tb.Fatalf("interop: the Python worker did not start: %v", shared.pyErr)
	}
	return shared.py
}

var unsafeSession = regexp.MustCompile(`[^A-Za-z0-9_]+`)

// TestSession creates a Spark session for tb with conf (typically a
// Warehouse's SparkConf) and drops it when tb ends. The session's name, derived
// from tb.Name(), is returned for SQL and Exec.
func (s *Spark) TestSession(tb testing.TB, conf map[string]string) string {
	tb.Helper()
	name := "t_" + unsafeSession.ReplaceAllString(tb.Name(), "_")
	ctx := context.Background()
	if err := s.NewSession(ctx, name, conf); err != nil {
		tb.Fatalf("interop: creating Spark session %s: %v", name, err)
	}
	tb.Cleanup(func() { _ = s.DropSession(context.Background(), name) })
	return name
}

// FloeBinary builds the floe command (./cmd/floe of this module) once per test
// binary and returns the executable's path, so tests can run floe beside the
// engines. It fails tb when the build fails.
func FloeBinary(tb testing.TB) string {
	tb.Helper()
	shared.floeOnce.Do(func() {
		root := testdir.ModuleRoot()
		if root == "" {
			shared.floeErr = fmt.Errorf("module root not found")
			return
		}
		dir, err := sharedDir()
		if err != nil {
			shared.floeErr = err
			return
		}
		bin := filepath.Join(dir, "floe")
		cmd := exec.Command("go", "build", "-o", bin, "./cmd/floe")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			shared.floeErr = fmt.Errorf("go build ./cmd/floe: %v\n%s", err, out)
			return
		}
		shared.floe = bin
	})
	if shared.floeErr != nil {
		tb.Fatalf("interop: %v", shared.floeErr)
	}
	return shared.floe
}
