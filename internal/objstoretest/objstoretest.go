// Package objstoretest runs object storage servers for tests: s3proxy (an
// S3 API over a local folder), fake-gcs-server (a GCS emulator) and
// Azurite (an Azure Blob Storage emulator, on Node.js), each on
// a free 127.0.0.1 port for the test that asks and stopped when it ends, and
// an HTTP proxy to put between floe and a server that counts requests and
// bytes and injects faults.
//
// The servers are installed by .ci/storage.sh. A test that needs one skips
// when it is absent, with a message saying how to install it, unless
// FLOE_STORAGE_REQUIRED=1, which makes that a failure (CI sets it).
// FLOE_S3_ENDPOINT (with FLOE_S3_ACCESS_KEY and FLOE_S3_SECRET_KEY) points
// the tests at an S3 server that is already running instead.
package objstoretest

import (
	"bytes"
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
	"sync"
	"syscall"
	"testing"
	"time"
)

// Environment variables the harness reads.
const (
	EnvRequired   = "FLOE_STORAGE_REQUIRED"
	EnvS3ProxyJar = "FLOE_S3PROXY_JAR"
	EnvFakeGCS    = "FLOE_FAKE_GCS_SERVER"
	EnvAzurite    = "FLOE_AZURITE" // Azurite's blob service script (azurite/dist/src/blob/main.js)
	EnvS3Endpoint = "FLOE_S3_ENDPOINT"
	EnvS3Access   = "FLOE_S3_ACCESS_KEY"
	EnvS3Secret   = "FLOE_S3_SECRET_KEY"
)

// Pinned versions, as .ci/storage.sh installs them.
const (
	S3ProxyVersion = "3.1.0"
	FakeGCSVersion = "v1.56.1"
	AzuriteVersion = "3.35.0"
)

func cacheDir() string {
	if d := os.Getenv("FLOE_CACHE"); d != "" {
		return d
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "floe")
}

// S3ProxyJar returns the path of the s3proxy jar, or "" when it is not installed.
func S3ProxyJar() string {
	p := os.Getenv(EnvS3ProxyJar)
	if p == "" {
		p = filepath.Join(cacheDir(), "storage", "s3proxy-"+S3ProxyVersion, "s3proxy-"+S3ProxyVersion+"-jar-with-dependencies.jar")
	}
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// FakeGCSBinary returns the path of fake-gcs-server, or "" when it is not installed.
func FakeGCSBinary() string {
	p := os.Getenv(EnvFakeGCS)
	if p == "" {
		p = filepath.Join(cacheDir(), "storage", "fake-gcs-server-"+FakeGCSVersion, "fake-gcs-server")
	}
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// Required reports whether a missing server fails tests instead of skipping them.
func Required() bool { return os.Getenv(EnvRequired) == "1" }

// Skip skips t with msg, or fails it when FLOE_STORAGE_REQUIRED=1.
func Skip(t testing.TB, msg string) {
	t.Helper()
	if Required() {
		t.Fatalf("%s (%s=1)", msg, EnvRequired)
	}
	t.Skip(msg)
}

// S3 is a running S3-compatible server.
type S3 struct {
	Endpoint  string // http://127.0.0.1:PORT
	AccessKey string
	SecretKey string
	Region    string
	// Dir is the folder holding the buckets (s3proxy's filesystem backend),
	// empty for an external server.
	Dir string

	proc process
}

// StartS3 returns an S3 server for t: the one FLOE_S3_ENDPOINT names, else
// a fresh s3proxy stopped when t ends. It skips t when s3proxy is not
// installed (see Skip).
func StartS3(t testing.TB) *S3 { t.Helper(); return StartS3With(t, S3Options{}) }

// S3Options change how StartS3With runs s3proxy.
type S3Options struct {
	// ClockOffset runs the server with its clock moved by this much
	// (faketime's syntax: "+1h", "-30m"), for clock skew tests.
	ClockOffset string
	// StrictHeaders leaves out s3proxy.ignore-unknown-headers, so the
	// server answers 501 NotImplemented to x-amz-checksum-* headers, as
	// strict or older S3-compatible servers do.
	StrictHeaders bool
}

// StartS3With is StartS3 with options; it always starts its own s3proxy
// when options are given.
func StartS3With(t testing.TB, o S3Options) *S3 {
	t.Helper()
	if ep := os.Getenv(EnvS3Endpoint); ep != "" && o == (S3Options{}) {
		return &S3{Endpoint: strings.TrimSuffix(ep, "/"), AccessKey: os.Getenv(EnvS3Access), SecretKey: os.Getenv(EnvS3Secret), Region: "us-east-1"}
	}
	jar := S3ProxyJar()
	if jar == "" {
		Skip(t, "s3proxy "+S3ProxyVersion+" is not installed: run `bash .ci/storage.sh` (or set "+EnvS3ProxyJar+")")
	}
	if _, err := exec.LookPath("java"); err != nil {
		Skip(t, "java not found: s3proxy needs Java 17 or newer")
	}
	if o.ClockOffset != "" {
		if _, err := exec.LookPath("faketime"); err != nil {
			Skip(t, "faketime not found: run `bash .ci/storage.sh` (it installs Debian's faketime)")
		}
	}
	s, err := startS3Proxy(jar, t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

func startS3Proxy(jar, dir string, o S3Options) (*S3, error) {
	data := filepath.Join(dir, "buckets")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, err
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		s := &S3{Endpoint: fmt.Sprintf("http://127.0.0.1:%d", port), AccessKey: "floe-access", SecretKey: "floe-secret-key", Region: "us-east-1", Dir: data}
		props := strings.Join([]string{
			"s3proxy.endpoint=" + s.Endpoint,
			"s3proxy.authorization=aws-v2-or-v4",
			"s3proxy.identity=" + s.AccessKey,
			"s3proxy.credential=" + s.SecretKey,
			"s3proxy.ignore-unknown-headers=" + strconv.FormatBool(!o.StrictHeaders),
			"jclouds.provider=filesystem",
			"jclouds.filesystem.basedir=" + data,
		}, "\n") + "\n"
		pf := filepath.Join(dir, "s3proxy.properties")
		if err := os.WriteFile(pf, []byte(props), 0o644); err != nil {
			return nil, err
		}
		argv := []string{"java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-jar", jar, "--properties", pf}
		if o.ClockOffset != "" {
			argv = append([]string{"faketime", "-f", o.ClockOffset}, argv...)
		}
		if s.proc, err = startProcess(fmt.Sprintf("s3proxy on port %d", port), argv, s.Endpoint+"/", 90*time.Second); err != nil {
			lastErr = err
			continue
		}
		return s, nil
	}
	return nil, lastErr
}

// Props returns the catalog properties that reach this server.
func (s *S3) Props() map[string]string {
	return map[string]string{
		"s3.endpoint":          s.Endpoint,
		"s3.access-key-id":     s.AccessKey,
		"s3.secret-access-key": s.SecretKey,
		"s3.region":            s.Region,
		"s3.path-style-access": "true",
	}
}

// PyArrowEnv returns the environment for the Java REST server, pyarrow and
// delta-rs to reach this server.
func (s *S3) PyArrowEnv() map[string]string {
	return map[string]string{
		"AWS_ACCESS_KEY_ID":                s.AccessKey,
		"AWS_SECRET_ACCESS_KEY":            s.SecretKey,
		"AWS_REGION":                       s.Region,
		"AWS_ENDPOINT_URL":                 s.Endpoint,
		"AWS_ALLOW_HTTP":                   "true",
		"AWS_REQUEST_CHECKSUM_CALCULATION": "WHEN_REQUIRED",
		"AWS_RESPONSE_CHECKSUM_VALIDATION": "WHEN_REQUIRED",
		"AWS_S3_ALLOW_UNSAFE_RENAME":       "true",
		"AWS_EC2_METADATA_DISABLED":        "true",
	}
}

// Stop stops the server (SIGTERM, then SIGKILL). Safe to call more than once.
func (s *S3) Stop() { s.proc.stop() }

// Pause stops the server's process (SIGSTOP) until Resume: connections stay
// open and nothing answers, as with a stalled server.
func (s *S3) Pause() error {
	if s.proc.cmd == nil {
		return fmt.Errorf("objstoretest: cannot pause an external server")
	}
	return syscall.Kill(-s.proc.cmd.Process.Pid, syscall.SIGSTOP)
}

// Resume continues a paused server.
func (s *S3) Resume() error {
	if s.proc.cmd == nil {
		return nil
	}
	return syscall.Kill(-s.proc.cmd.Process.Pid, syscall.SIGCONT)
}

// Logs returns the end of the server's output.
func (s *S3) Logs() string {
	if s.proc.logs == nil {
		return ""
	}
	return s.proc.logs.tail(8 << 10)
}

// CreateBucket creates a bucket (a PUT on the bucket, signed with the
// server's credentials).
func (s *S3) CreateBucket(t testing.TB, name string) {
	t.Helper()
	if err := s.createBucket(name); err != nil {
		t.Fatal(err)
	}
}

func (s *S3) createBucket(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := newS3Client(s)
	return c.createBucket(ctx, name)
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func waitHTTP(url string, exited <-chan struct{}, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		resp, err := client.Get(url)
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("exited before answering")
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer on %s within %v: %v", url, timeout, err)
		}
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() > 1<<20 {
		rest := l.b.Bytes()[l.b.Len()-(256<<10):]
		nb := append([]byte(nil), rest...)
		l.b.Reset()
		l.b.Write(nb)
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.b.Bytes()
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
