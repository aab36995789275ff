//go:build interop

package interop_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/floedata/floe/interop"
)

// TestWorkerProtocol checks the properties the harness relies on: output an
// engine prints (Python's print, the JVM's System.out) never corrupts the
// protocol; a request that outlives its context kills the worker with an error
// that says so; a dead worker refuses later calls with ErrWorkerExited.
func TestWorkerProtocol(t *testing.T) {
	e := interop.Require(t)
	spark := interop.SharedSpark(t)
	ctx := testCtx(t)

	raw, err := spark.Python(ctx, "default", `
print("noise on stdout")
spark._jvm.java.lang.System.out.println("noise from the JVM")
result = {"echo": args["x"]}`, map[string]any{"x": "ok"})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(raw); got != `{"echo": "ok"}` {
		t.Errorf("exec result = %s, want {\"echo\": \"ok\"}", got)
	}
	if _, err := spark.SQL(ctx, "default", "SELECT 1"); err != nil {
		t.Fatalf("Spark worker unusable after printing to stdout: %v", err)
	}

	py, err := interop.StartPy(ctx, e, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer py.Close()
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	_, err = py.Python(short, "import time\ntime.sleep(60)", nil)
	cancel()
	if !errors.Is(err, interop.ErrWorkerExited) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("timed-out call: error = %v, want ErrWorkerExited wrapping context.DeadlineExceeded", err)
	}
	if _, err := py.Python(ctx, "result = 1", nil); !errors.Is(err, interop.ErrWorkerExited) {
		t.Fatalf("call on a killed worker: error = %v, want ErrWorkerExited", err)
	}

	py2, err := interop.StartPy(ctx, e, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer py2.Close()
	_, err = py2.Python(ctx, "import sys\nsys.stderr.write('last words\\n')\nimport os\nos._exit(3)", nil)
	if !errors.Is(err, interop.ErrWorkerExited) || !strings.Contains(err.Error(), "last words") ||
		!strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("crashed worker: error = %v, want ErrWorkerExited with its stderr and exit status", err)
	}
	var n json.Number
	raw, err = interop.SharedPy(t).Python(ctx, "result = 2**63 - 1", nil)
	if err != nil || json.Unmarshal(raw, &n) != nil || n.String() != "9223372036854775807" {
		t.Errorf("shared worker after others died: %s, %v", raw, err)
	}
}

// TestRESTServerStops checks that Close really stops the server.
func TestRESTServerStops(t *testing.T) {
	e := interop.Require(t)
	ctx := testCtx(t)
	srv, err := interop.StartREST(ctx, e, interop.RESTOptions{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(srv.URI + "v1/config")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/config = %d, want 200", resp.StatusCode)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 5 * time.Second}
	if resp, err := client.Get(srv.URI + "v1/config"); err == nil {
		resp.Body.Close()
		t.Fatalf("REST server still answers after Close (status %d)", resp.StatusCode)
	}
}
