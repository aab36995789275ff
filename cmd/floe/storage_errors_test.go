package main_test

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/floedata/floe/internal/objstoretest"
)

// floeIn runs floe in work with a configuration file holding the catalog
// lake (SQLite, warehouse wh, the extra keys) and returns its exit status
// and stderr.
func floeIn(t *testing.T, work, wh string, keys map[string]string, env []string, args ...string) (int, string) {
	t.Helper()
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "catalog:\n  lake:\n    type: sql\n    uri: %s\n    warehouse: %s\n", filepath.Join(work, "catalog.db"), wh)
	for k, v := range keys {
		fmt.Fprintf(&cfg, "    %s: %q\n", k, v)
	}
	if err := os.WriteFile(filepath.Join(work, "floe.yaml"), []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(floeBin, append([]string{"--config", "floe.yaml", "--catalog", "lake"}, args...)...)
	cmd.Dir = work
	cmd.Env = append(append(os.Environ(), "AWS_EC2_METADATA_DISABLED=true"), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, stderr.String()
}

func s3Keys(srv *objstoretest.S3, endpoint string) map[string]string {
	k := srv.Props()
	k["s3.endpoint"] = endpoint
	k["s3.retry.total-timeout"] = "5s"
	return k
}

// noAWSEnv hides the machine's AWS configuration from floe.
func noAWSEnv(t *testing.T) []string {
	dir := t.TempDir()
	return []string{"AWS_REGION=", "AWS_DEFAULT_REGION=", "AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=", "AWS_SESSION_TOKEN=", "AWS_PROFILE=",
		"AWS_CONFIG_FILE=" + filepath.Join(dir, "config"), "AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(dir, "credentials"),
		"AWS_S3_ENDPOINT=", "AWS_ENDPOINT_URL=", "AWS_ENDPOINT_URL_S3="}
}

const createT = `table create ns.t --schema "id long not null" --identifier id`

// TestStorageBadInput: each mistake in the storage settings is a clear
// error that names the location and the setting, and commits nothing.
func TestStorageBadInput(t *testing.T) {
	srv := objstoretest.StartS3(t)
	srv.CreateBucket(t, "bad-input")
	env := noAWSEnv(t)
	for _, tc := range []struct {
		name string
		wh   string
		keys map[string]string
		args string
		want []string
	}{
		{name: "unknown scheme", wh: "s4://bad-input/wh", keys: s3Keys(srv, srv.Endpoint), args: createT,
			want: []string{"s4://bad-input/wh", `no file IO for scheme "s4"`, "s3://"}},
		{name: "unknown scheme of a Delta table", wh: "s3://bad-input/wh", keys: s3Keys(srv, srv.Endpoint), args: "delta changes hdfs://nn/t --start-version 0",
			want: []string{"hdfs://nn/t", `no file IO for scheme "hdfs"`}},
		{name: "no such bucket", wh: "s3://no-such-bucket/wh", keys: s3Keys(srv, srv.Endpoint), args: createT,
			want: []string{"s3://no-such-bucket", "bucket does not exist", "s3.endpoint " + srv.Endpoint}},
		{name: "wrong secret", wh: "s3://bad-input/wh", keys: func() map[string]string {
			k := s3Keys(srv, srv.Endpoint)
			k["s3.secret-access-key"] = "wrong"
			return k
		}(), args: createT, want: []string{"s3://bad-input/wh", "SignatureDoesNotMatch", "s3.secret-access-key"}},
		{name: "unknown access key", wh: "s3://bad-input/wh", keys: func() map[string]string {
			k := s3Keys(srv, srv.Endpoint)
			k["s3.access-key-id"] = "nobody"
			return k
		}(), args: createT, want: []string{"s3://bad-input/wh", "s3.access-key-id"}},
		{name: "no region on AWS", wh: "s3://bad-input/wh", keys: map[string]string{"s3.access-key-id": "a", "s3.secret-access-key": "b"}, args: createT,
			want: []string{"s3://bad-input: no S3 region: set s3.region", "AWS_REGION"}},
		{name: "no credentials", wh: "s3://bad-input/wh", keys: map[string]string{"s3.endpoint": srv.Endpoint}, args: createT,
			want: []string{"s3://bad-input: no S3 credentials: set s3.access-key-id and s3.secret-access-key", "AWS_ACCESS_KEY_ID"}},
		{name: "bad setting", wh: "s3://bad-input/wh", keys: func() map[string]string {
			k := s3Keys(srv, srv.Endpoint)
			k["s3.request-timeout"] = "soon"
			return k
		}(), args: createT, want: []string{"s3://bad-input", `s3.request-timeout "soon"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			work := t.TempDir()
			if code, stderr := floeIn(t, work, tc.wh, tc.keys, env, "namespace", "create", "ns"); code != 0 && !strings.Contains(tc.args, "delta") {
				t.Logf("namespace create: %s", stderr)
			}
			args, err := splitArgs(tc.args)
			if err != nil {
				t.Fatal(err)
			}
			code, stderr := floeIn(t, work, tc.wh, tc.keys, env, args...)
			t.Logf("floe %s:\n%s", tc.args, stderr)
			if code != 1 {
				t.Fatalf("exit %d, want 1; stderr:\n%s", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, "panic") {
				t.Fatalf("a Go trace reached the user:\n%s", stderr)
			}
		})
	}
	if objs := srv.List(t, "bad-input", "wh/ns.db/t/metadata/"); len(objs) != 0 {
		t.Fatalf("a failed create left table metadata: %v", objs)
	}
}

// TestStorageClockSkew runs s3proxy with its clock an hour ahead: floe's
// signatures are then too old for the server. The AWS SDK corrects its
// clock from the server's answer and retries; the command must succeed, or
// fail with an error that names the skew.
func TestStorageClockSkew(t *testing.T) {
	srv := objstoretest.StartS3With(t, objstoretest.S3Options{ClockOffset: "+1h"})
	srv.CreateBucket(t, "skew")
	px := objstoretest.NewProxy(t, srv.Endpoint)
	work := t.TempDir()
	keys := s3Keys(srv, px.URL)
	code, stderr := floeIn(t, work, "s3://skew/wh", keys, noAWSEnv(t), "namespace", "create", "ns")
	if code != 0 {
		t.Fatal(stderr)
	}
	code, stderr = floeIn(t, work, "s3://skew/wh", keys, noAWSEnv(t), "table", "create", "ns.t", "--schema", "id long")
	c := px.Counts()
	t.Logf("exit %d: %s; %v, answers by status %v", code, stderr, c, c.Status)
	if c.Status[http.StatusForbidden] == 0 {
		t.Fatalf("the server accepted every request: its clock is not skewed (answers %v)", c.Status)
	}
	if code != 0 && !(strings.Contains(stderr, "RequestTimeTooSkewed") && strings.Contains(stderr, "clock")) {
		t.Fatalf("exit %d without naming the clock skew:\n%s", code, stderr)
	}
}

// TestStorageStalledServer stops s3proxy (SIGSTOP) in the middle of a
// command: floe gives up after its request timeout and retry budget
// instead of hanging, commits nothing, and the rerun after the server
// resumes converges.
func TestStorageStalledServer(t *testing.T) {
	srv := objstoretest.StartS3(t)
	if srv.Dir == "" {
		t.Skip("needs a server this test started (SIGSTOP)")
	}
	srv.CreateBucket(t, "stall")
	work := t.TempDir()
	keys := s3Keys(srv, srv.Endpoint)
	keys["s3.request-timeout"] = "1s"
	keys["s3.retry.total-timeout"] = "4s"
	env := noAWSEnv(t)
	for _, args := range []string{"namespace create ns", `table create ns.t --schema "id long not null, v string" --identifier id`} {
		a, _ := splitArgs(args)
		if code, stderr := floeIn(t, work, "s3://stall/wh", keys, env, a...); code != 0 {
			t.Fatal(stderr)
		}
	}
	if err := os.WriteFile(filepath.Join(work, "rows.csv"), []byte("id,v\n1,a\n2,b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := srv.Pause(); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			srv.Resume()
		}
	}()
	start := time.Now()
	code, stderr := floeIn(t, work, "s3://stall/wh", keys, env, "table", "append", "ns.t", "rows.csv")
	took := time.Since(start)
	srv.Resume()
	resumed = true
	if code != 1 || !strings.Contains(stderr, "s3.request-timeout") {
		t.Fatalf("append against a stopped server: exit %d after %v, want a failure naming s3.request-timeout:\n%s", code, took, stderr)
	}
	if took > 2*time.Minute {
		t.Fatalf("floe took %v against a stopped server", took)
	}
	code, stderr = floeIn(t, work, "s3://stall/wh", keys, env, "table", "append", "ns.t", "rows.csv")
	if code != 0 {
		t.Fatalf("rerun after resume: %s", stderr)
	}
	cmd := exec.Command(floeBin, "--config", "floe.yaml", "--catalog", "lake", "table", "scan", "ns.t", "--format", "csv")
	cmd.Dir = work
	out, err := cmd.Output()
	if err != nil || strings.Count(string(out), "\n") != 3 {
		t.Fatalf("after the rerun the table holds:\n%s (%v): want the two rows once", out, err)
	}
}
