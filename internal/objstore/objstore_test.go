package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	iceio "github.com/apache/iceberg-go/io"

	"github.com/floedata/floe/internal/objstoretest"
	"github.com/floedata/floe/internal/stallnet/stallnettest"
)

func TestParseSettings(t *testing.T) {
	for _, tc := range []struct {
		name  string
		props map[string]string
		check func(s3Settings) string
		err   string
	}{
		{name: "defaults", props: map[string]string{}, check: func(s s3Settings) string {
			if s.pathStyle || s.checksum != "" || s.requestTO != DefaultRequestTimeout || s.retry.budget != DefaultRetryBudget || s.retry.maxAttempts != DefaultNumRetries+1 {
				return fmt.Sprintf("%+v", s)
			}
			return ""
		}},
		{name: "endpoint implies path style and checksums when required", props: map[string]string{"s3.endpoint": "http://127.0.0.1:1"}, check: func(s s3Settings) string {
			if !s.pathStyle || s.checksum != "when-required" {
				return fmt.Sprintf("%+v", s)
			}
			return ""
		}},
		{name: "path-style-access false wins", props: map[string]string{"s3.endpoint": "http://x", "s3.path-style-access": "false"}, check: func(s s3Settings) string {
			if s.pathStyle {
				return "path style"
			}
			return ""
		}},
		{name: "path-style-access true on AWS", props: map[string]string{"s3.path-style-access": "true"}, check: func(s s3Settings) string {
			if !s.pathStyle {
				return "virtual"
			}
			return ""
		}},
		{name: "durations", props: map[string]string{"s3.request-timeout": "2.5", "s3.retry.total-timeout": "90s", "s3.retry.num-retries": "3", "s3.retry.min-wait-ms": "10", "s3.retry.max-wait-ms": "50"}, check: func(s s3Settings) string {
			if s.requestTO != 2500*time.Millisecond || s.retry.budget != 90*time.Second || s.retry.maxAttempts != 4 || s.retry.minWait != 10*time.Millisecond || s.retry.maxWait != 50*time.Millisecond {
				return fmt.Sprintf("%+v", s)
			}
			return ""
		}},
		{name: "checksum spelled the AWS way", props: map[string]string{"s3.checksum-calculation": "WHEN_SUPPORTED", "s3.endpoint": "http://x"}, check: func(s s3Settings) string {
			if s.checksum != "when-supported" {
				return s.checksum
			}
			return ""
		}},
		{name: "bad checksum", props: map[string]string{"s3.checksum-calculation": "never"}, err: `s3.checksum-calculation "never": want when-supported or when-required`},
		{name: "bad timeout", props: map[string]string{"s3.request-timeout": "soon"}, err: `s3.request-timeout "soon": want seconds`},
		{name: "negative timeout", props: map[string]string{"s3.request-timeout": "-1"}, err: `want a positive duration`},
		{name: "half a key pair", props: map[string]string{"s3.access-key-id": "AK"}, err: "s3.access-key-id is set but s3.secret-access-key is not"},
		{name: "bad bool", props: map[string]string{"s3.path-style-access": "yes please"}, err: `s3.path-style-access "yes please": want true or false`},
		{name: "max below min", props: map[string]string{"s3.retry.min-wait-ms": "100", "s3.retry.max-wait-ms": "10"}, err: "s3.retry.max-wait-ms (10ms) is less than s3.retry.min-wait-ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("AWS_S3_ENDPOINT", "")
			s, err := parseS3Settings(tc.props)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if msg := tc.check(s); msg != "" {
				t.Fatal(msg)
			}
		})
	}
}

func TestBackoffIsJitteredAndCapped(t *testing.T) {
	b := backoff{minWait: 100 * time.Millisecond, maxWait: time.Second}
	for attempt := 1; attempt <= 60; attempt++ {
		want := b.maxWait
		if attempt <= 4 {
			want = b.minWait << (attempt - 1)
		}
		for range 20 {
			d := b.delay(attempt)
			if d < want/2 || d > want {
				t.Fatalf("attempt %d: delay %v outside [%v, %v]", attempt, d, want/2, want)
			}
		}
	}
}

// s3Props are settings for a fake S3 server at url, with fast retries.
func s3Props(url string, extra ...string) map[string]string {
	p := map[string]string{
		"s3.endpoint": url, "s3.access-key-id": "AK", "s3.secret-access-key": "SK", "s3.region": "us-east-1",
		"s3.retry.min-wait-ms": "1", "s3.retry.max-wait-ms": "20",
	}
	for i := 0; i+1 < len(extra); i += 2 {
		p[extra[i]] = extra[i+1]
	}
	return p
}

// fakeS3 is a minimal in-memory S3 for PUT and GET (with Range) of objects,
// recording the headers it saw; fail, when set, answers instead.
type fakeS3 struct {
	mu      sync.Mutex
	objects map[string][]byte
	headers []http.Header
	fail    func(r *http.Request, n int) bool // answer 503 SlowDown
	stall   func(r *http.Request, n int) bool // never answer
	n       int
}

func (f *fakeS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.n++
	n := f.n
	f.headers = append(f.headers, r.Header.Clone())
	fail, stall := f.fail != nil && f.fail(r, n), f.stall != nil && f.stall(r, n)
	f.mu.Unlock()
	if stall {
		<-r.Context().Done()
		return
	}
	if fail {
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `<Error><Code>SlowDown</Code><Message>slow down</Message></Error>`)
		return
	}
	switch r.Method {
	case http.MethodPut:
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.objects[r.URL.Path] = b
		f.mu.Unlock()
		w.Header().Set("ETag", `"x"`)
	case http.MethodGet, http.MethodHead:
		f.mu.Lock()
		b, ok := f.objects[r.URL.Path]
		f.mu.Unlock()
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `<Error><Code>NoSuchKey</Code><Message>no</Message></Error>`)
			return
		}
		http.ServeContent(w, r, "", time.Unix(0, 0), bytes.NewReader(b))
	default:
		w.WriteHeader(http.StatusNotImplemented)
	}
}

func newFake(t *testing.T) (*fakeS3, string) {
	f := &fakeS3{objects: map[string][]byte{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv.URL
}

func TestChecksumHeaders(t *testing.T) {
	for _, tc := range []struct {
		name  string
		props []string
		want  bool
	}{
		{name: "custom endpoint default: when required", want: false},
		{name: "when-supported asked for", props: []string{"s3.checksum-calculation", "when-supported"}, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, url := newFake(t)
			fsys, err := iceio.LoadFS(context.Background(), s3Props(url, tc.props...), "s3://bkt/a")
			if err != nil {
				t.Fatal(err)
			}
			if err := fsys.(iceio.WriteFileIO).WriteFile("s3://bkt/a/f.txt", []byte("hello")); err != nil {
				t.Fatal(err)
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			got := false
			for _, h := range f.headers {
				for k := range h {
					if strings.HasPrefix(strings.ToLower(k), "x-amz-checksum-") || strings.EqualFold(k, "x-amz-sdk-checksum-algorithm") {
						got = true
					}
				}
			}
			if got != tc.want {
				t.Fatalf("checksum headers sent: %v, want %v (headers %v)", got, tc.want, f.headers)
			}
			if string(f.objects["/bkt/a/f.txt"]) != "hello" {
				t.Fatalf("stored %q (path style expected)", f.objects)
			}
		})
	}
}

func TestRetriesSlowDownReadsAndWrites(t *testing.T) {
	f, url := newFake(t)
	// Every other request fails at first: writes and reads both need retries.
	f.fail = func(r *http.Request, n int) bool { return n <= 6 && n%2 == 1 }
	fsys, err := iceio.LoadFS(context.Background(), s3Props(url), "s3://bkt/")
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("0123456789"), 20000) // beyond the Open prefix
	if err := fsys.(iceio.WriteFileIO).WriteFile("s3://bkt/t/data.bin", data); err != nil {
		t.Fatal(err)
	}
	fl, err := fsys.Open("s3://bkt/t/data.bin")
	if err != nil {
		t.Fatal(err)
	}
	defer fl.Close()
	buf := make([]byte, 100)
	if _, err := fl.ReadAt(buf, 150000); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf, data[150000:150100]) {
		t.Fatal("ReadAt returned other bytes")
	}
	all, err := io.ReadAll(fl)
	if err != nil || !bytes.Equal(all, data) {
		t.Fatalf("Read: %d bytes, %v", len(all), err)
	}
	if _, err := fsys.Open("s3://bkt/t/missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v, want fs.ErrNotExist", err)
	}
}

func TestBudgetEndsOutage(t *testing.T) {
	f, url := newFake(t)
	f.fail = func(*http.Request, int) bool { return true }
	props := s3Props(url, "s3.retry.total-timeout", "300ms", "s3.retry.num-retries", "1000")
	fsys, err := iceio.LoadFS(context.Background(), props, "s3://bkt/")
	if err != nil {
		t.Fatal(err)
	}
	err = fsys.(iceio.WriteFileIO).WriteFile("s3://bkt/x", []byte("x"))
	var be *BudgetError
	if !errors.As(err, &be) {
		t.Fatalf("got %v, want a BudgetError", err)
	}
	if be.Attempts < 2 || !strings.Contains(err.Error(), "s3.retry.total-timeout 300ms") || !strings.Contains(err.Error(), "SlowDown") {
		t.Fatalf("error %q (attempts %d)", err, be.Attempts)
	}
}

func TestStalledServerTimesOut(t *testing.T) {
	f, url := newFake(t)
	f.objects["/bkt/k"] = []byte("value")
	// The first two requests hang; the request timeout abandons them and
	// the retries get through.
	f.stall = func(r *http.Request, n int) bool { return n <= 2 }
	props := s3Props(url, "s3.request-timeout", "200ms")
	fsys, err := iceio.LoadFS(context.Background(), props, "s3://bkt/")
	if err != nil {
		t.Fatal(err)
	}
	b, err := fsys.(iceio.ReadFileIO).ReadFile("s3://bkt/k")
	if err != nil || string(b) != "value" {
		t.Fatalf("got %q, %v", b, err)
	}
	f.mu.Lock()
	n := f.n
	f.mu.Unlock()
	if n != 3 {
		t.Fatalf("server saw %d requests, want 3 (two stalled, one answered)", n)
	}
}

// An endpoint that does not complete the connection fails after the
// connect timeout and the retries, with an error naming s3.connect-timeout
// and the location (the dialer's own says only "i/o timeout").
func TestConnectTimeout(t *testing.T) {
	addr := stallnettest.FullBacklog(t)
	props := s3Props("http://"+addr, "s3.connect-timeout", "0.3", "s3.retry.num-retries", "1")
	fsys, err := iceio.LoadFS(context.Background(), props, "s3://bkt/")
	if err != nil {
		t.Fatal(err)
	}
	for name, op := range map[string]func() error{
		"read":  func() error { _, err := fsys.(iceio.ReadFileIO).ReadFile("s3://bkt/t/x.json"); return err },
		"write": func() error { return fsys.(iceio.WriteFileIO).WriteFile("s3://bkt/t/y.json", []byte("{}")) },
	} {
		start := time.Now()
		err := op()
		took := time.Since(start)
		if err == nil || !strings.Contains(err.Error(), "connecting to "+addr+": no answer for 300ms (s3.connect-timeout)") || !strings.Contains(err.Error(), "s3://bkt/t/") {
			t.Errorf("%s: error %v, want one naming the location and s3.connect-timeout", name, err)
		}
		if took > 20*time.Second {
			t.Errorf("%s took %v with a 0.3s connect timeout and one retry", name, took)
		}
		t.Logf("%s failed after %v: %v", name, took.Round(time.Millisecond), err)
	}
}

func TestMissingRegionAndCredentials(t *testing.T) {
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_S3_ENDPOINT", "")
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_ENDPOINT_URL_S3", "")
	_, err := iceio.LoadFS(context.Background(), map[string]string{"s3.access-key-id": "A", "s3.secret-access-key": "B"}, "s3://bkt/t")
	if err == nil || !strings.Contains(err.Error(), "s3://bkt: no S3 region: set s3.region") || !strings.Contains(err.Error(), "AWS_REGION") {
		t.Fatalf("no region: %v", err)
	}
	_, err = iceio.LoadFS(context.Background(), map[string]string{"s3.region": "eu-west-1"}, "s3://bkt/t")
	if err == nil || !strings.Contains(err.Error(), "s3://bkt: no S3 credentials: set s3.access-key-id and s3.secret-access-key") {
		t.Fatalf("no credentials: %v", err)
	}
}

// TestS3Proxy writes and reads through floe's IO against s3proxy, through
// the counting proxy: one GET per small file opened, ranged reads after it.
func TestS3Proxy(t *testing.T) {
	srv := objstoretest.StartS3(t)
	srv.CreateBucket(t, "objstore")
	px := objstoretest.NewProxy(t, srv.Endpoint)
	props := srv.Props()
	props["s3.endpoint"] = px.URL
	fsys, err := iceio.LoadFS(context.Background(), props, "s3://objstore/")
	if err != nil {
		t.Fatal(err)
	}
	small := []byte("small file")
	big := bytes.Repeat([]byte("abcdefghij"), 50000)
	w := fsys.(iceio.WriteFileIO)
	if err := w.WriteFile("s3://objstore/t/small", small); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile("s3://objstore/t/big", big); err != nil {
		t.Fatal(err)
	}
	px.Counts()
	f, err := fsys.Open("s3://objstore/t/small")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(f)
	f.Close()
	if err != nil || !bytes.Equal(got, small) {
		t.Fatalf("small: %q %v", got, err)
	}
	if c := px.Counts(); c.Total() != 1 {
		t.Fatalf("open+read of a small file: %v, want 1 request", c)
	}
	f, err = fsys.Open("s3://objstore/t/big")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1000)
	if _, err := f.ReadAt(buf, int64(len(big))-1000); err != nil || !bytes.Equal(buf, big[len(big)-1000:]) {
		t.Fatal("ReadAt of the tail", err)
	}
	f.Close()
	c := px.Counts()
	if c.Requests["GET-RANGE"] != 2 || c.Total() != 2 || c.BytesOut > prefixSize+2000 {
		t.Fatalf("open + tail ReadAt of a big file: %v, want 2 ranged GETs and about 65 KiB", c)
	}

	// Faults: every kind, on a third of the requests; every read and write
	// still succeeds.
	px.SetFaults(objstoretest.FaultPlan{Rate: 0.33, Seed: 7, Latency: 5 * time.Millisecond,
		Kinds: []objstoretest.Fault{objstoretest.SlowDown, objstoretest.Reset, objstoretest.ResetMidBody, objstoretest.Latency, objstoretest.InternalError}})
	for i := range 20 {
		name := fmt.Sprintf("s3://objstore/t/f%d", i)
		if err := w.WriteFile(name, big[:1000*(i+1)]); err != nil {
			t.Fatalf("write %s: %v", name, err)
		}
		b, err := fsys.(iceio.ReadFileIO).ReadFile(name)
		if err != nil || !bytes.Equal(b, big[:1000*(i+1)]) {
			t.Fatalf("read %s: %d bytes, %v", name, len(b), err)
		}
		f, err := fsys.Open(name)
		if err != nil {
			t.Fatalf("open %s: %v", name, err)
		}
		all, err := io.ReadAll(f)
		f.Close()
		if err != nil || !bytes.Equal(all, big[:1000*(i+1)]) {
			t.Fatalf("read %s: %d bytes, %v", name, len(all), err)
		}
	}
	f, err = fsys.Open("s3://objstore/t/big")
	if err != nil {
		t.Fatal(err)
	}
	all, err := io.ReadAll(f)
	f.Close()
	if err != nil || !bytes.Equal(all, big) {
		t.Fatalf("read big under faults: %d bytes, %v", len(all), err)
	}
	inj := px.Injected()
	if len(inj) < 3 {
		t.Fatalf("faults injected: %v, want most kinds", inj)
	}
	t.Logf("faults injected and survived: %v", inj)
}

func TestParallelRangedRead(t *testing.T) {
	f, url := newFake(t)
	data := make([]byte, 3*partSize+12345)
	for i := range data {
		data[i] = byte(i * 7)
	}
	f.objects["/bkt/big"] = data
	fsys, err := iceio.LoadFS(context.Background(), s3Props(url), "s3://bkt/")
	if err != nil {
		t.Fatal(err)
	}
	fl, err := fsys.Open("s3://bkt/big")
	if err != nil {
		t.Fatal(err)
	}
	defer fl.Close()
	f.mu.Lock()
	f.n = 0
	f.mu.Unlock()
	buf := make([]byte, len(data)-100)
	n, err := fl.ReadAt(buf, 100)
	if err != nil || n != len(buf) || !bytes.Equal(buf, data[100:]) {
		t.Fatalf("ReadAt: %d bytes, %v", n, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n != 4 {
		t.Fatalf("%d requests for a %d-byte read, want 4 parts", f.n, len(buf))
	}
}

// TestStrictServerChecksums runs against s3proxy without
// s3proxy.ignore-unknown-headers: it refuses x-amz-checksum-* headers with
// 501, as strict or older servers do. With a custom endpoint floe sends
// checksums only when required, so writes succeed; asking for
// when-supported gets the refusal.
func TestStrictServerChecksums(t *testing.T) {
	srv := objstoretest.StartS3With(t, objstoretest.S3Options{StrictHeaders: true})
	srv.CreateBucket(t, "strict")
	for _, tc := range []struct {
		checksum string
		ok       bool
	}{{"", true}, {"when-required", true}, {"when-supported", false}} {
		props := srv.Props()
		props["s3.retry.total-timeout"] = "5s"
		if tc.checksum != "" {
			props["s3.checksum-calculation"] = tc.checksum
		}
		fsys, err := iceio.LoadFS(context.Background(), props, "s3://strict/")
		if err != nil {
			t.Fatal(err)
		}
		err = fsys.(iceio.WriteFileIO).WriteFile("s3://strict/f-"+tc.checksum, bytes.Repeat([]byte("x"), 1000))
		if tc.ok && err != nil {
			t.Errorf("checksums %q: %v", tc.checksum, err)
		}
		if !tc.ok && (err == nil || !strings.Contains(err.Error(), "501")) {
			t.Errorf("checksums %q against a strict server: %v, want its 501 refusal", tc.checksum, err)
		}
	}
}

// TestProfileAndEnvironment: with no keys in the settings, credentials and
// region come from the AWS environment: a named profile (s3.profile-name)
// of the shared files, else AWS_* variables.
func TestProfileAndEnvironment(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/config", []byte("[profile lake]\nregion = eu-west-3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/credentials", []byte("[lake]\naws_access_key_id = PROFILEKEY\naws_secret_access_key = s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_CONFIG_FILE", dir+"/config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", dir+"/credentials")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	for _, tc := range []struct {
		name       string
		props, env map[string]string
		key        string
		region     string
	}{
		{name: "profile", props: map[string]string{"s3.profile-name": "lake"}, key: "PROFILEKEY", region: "eu-west-3"},
		{name: "AWS_PROFILE", env: map[string]string{"AWS_PROFILE": "lake"}, key: "PROFILEKEY", region: "eu-west-3"},
		{name: "variables", env: map[string]string{"AWS_ACCESS_KEY_ID": "ENVKEY", "AWS_SECRET_ACCESS_KEY": "x", "AWS_REGION": "ap-south-1"}, key: "ENVKEY", region: "ap-south-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			f, url := newFake(t)
			props := map[string]string{"s3.endpoint": url}
			for k, v := range tc.props {
				props[k] = v
			}
			fsys, err := iceio.LoadFS(context.Background(), props, "s3://bkt/")
			if err != nil {
				t.Fatal(err)
			}
			if err := fsys.(iceio.WriteFileIO).WriteFile("s3://bkt/x", []byte("x")); err != nil {
				t.Fatal(err)
			}
			f.mu.Lock()
			auth := f.headers[len(f.headers)-1].Get("Authorization")
			f.mu.Unlock()
			if !strings.Contains(auth, "Credential="+tc.key+"/") || !strings.Contains(auth, "/"+tc.region+"/s3/") {
				t.Fatalf("signed with %q, want key %s and region %s", auth, tc.key, tc.region)
			}
		})
	}
}
