package gcsio_test

import (
	"bytes"
	"context"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	iceio "github.com/apache/iceberg-go/io"

	_ "github.com/floedata/floe/gcsio"
	"github.com/floedata/floe/internal/objstoretest"
	"github.com/floedata/floe/internal/stallnet/stallnettest"
)

// A GCS endpoint that accepts connections and never answers fails reads
// and writes after the request timeout and the retries, with an error
// naming gcs.request-timeout; before, floe waited forever.
func TestStalledServerFails(t *testing.T) {
	addr, _ := stallnettest.Silent(t)
	props := map[string]string{
		"gcs.endpoint":          "http://" + addr + "/storage/v1/",
		"gcs.no-auth":           "true",
		"gcs.request-timeout":   "0.3", // seconds, as for s3.request-timeout
		"gcs.retry.num-retries": "1",
	}
	ctx := context.Background()
	fsys, err := iceio.LoadFS(ctx, props, "gs://bucket/wh")
	if err != nil {
		t.Fatal(err)
	}
	for name, op := range map[string]func() error{
		"read": func() error { _, err := fsys.(iceio.ReadFileIO).ReadFile("gs://bucket/wh/x.json"); return err },
		"write": func() error {
			return fsys.(iceio.WriteFileIO).WriteFile("gs://bucket/wh/y.json", []byte("{}"))
		},
	} {
		start := time.Now()
		done := make(chan error, 1)
		go func() { done <- op() }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "for 300ms (gcs.request-timeout)") {
				t.Errorf("%s: error %v, want one naming gcs.request-timeout", name, err)
			}
			t.Logf("%s failed after %v: %v", name, time.Since(start).Round(time.Millisecond), err)
		case <-time.After(60 * time.Second):
			t.Fatalf("%s: still waiting after 60s", name)
		}
	}
}

// An endpoint that does not complete the connection fails reads and
// writes after the connect timeout and the retries, with an error naming
// gcs.connect-timeout (the dialer's own says only "i/o timeout").
func TestConnectTimeout(t *testing.T) {
	addr := stallnettest.FullBacklog(t)
	props := map[string]string{
		"gcs.endpoint":          "http://" + addr + "/storage/v1/",
		"gcs.no-auth":           "true",
		"gcs.connect-timeout":   "0.3",
		"gcs.retry.num-retries": "1",
	}
	fsys, err := iceio.LoadFS(context.Background(), props, "gs://bucket/wh")
	if err != nil {
		t.Fatal(err)
	}
	for name, op := range map[string]func() error{
		"read": func() error { _, err := fsys.(iceio.ReadFileIO).ReadFile("gs://bucket/wh/x.json"); return err },
		"write": func() error {
			return fsys.(iceio.WriteFileIO).WriteFile("gs://bucket/wh/y.json", []byte("{}"))
		},
	} {
		start := time.Now()
		err := op()
		took := time.Since(start)
		if err == nil || !strings.Contains(err.Error(), "connecting to "+addr+": no answer for 300ms (gcs.connect-timeout)") {
			t.Errorf("%s: error %v, want one naming gcs.connect-timeout", name, err)
		}
		if took > 20*time.Second {
			t.Errorf("%s took %v with a 0.3s connect timeout and one retry", name, took)
		}
		t.Logf("%s failed after %v: %v", name, took.Round(time.Millisecond), err)
	}
}

func TestBadSettings(t *testing.T) {
	for key, v := range map[string]string{"gcs.request-timeout": "soon", "gcs.connect-timeout": "-1s", "gcs.retry.num-retries": "many"} {
		_, err := iceio.LoadFS(context.Background(), map[string]string{key: v, "gcs.no-auth": "true"}, "gs://bucket/wh")
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s=%s: error %v, want one naming the setting", key, v, err)
		}
	}
}

// A download that stalls in the middle of its body is resumed from the
// offset it reached (Google's client reads again with a Range), so the
// read returns the whole object.
func TestStalledDownloadResumes(t *testing.T) {
	data := make([]byte, 200000)
	for i := range data {
		data[i] = byte(i % 251) // no two offsets of the test hold the same bytes
	}
	for _, tc := range []struct {
		name   string
		read   func(iceio.IO) ([]byte, error)
		cut    int      // bytes a stalled GET delivers
		stalls int      // GETs that stall
		ranges []string // the ranges the GETs ask for
		want   []byte
	}{
		{name: "ReadFile", read: func(fsys iceio.IO) ([]byte, error) {
			return fsys.(iceio.ReadFileIO).ReadFile("gs://bucket/wh/x.bin")
		}, cut: 70000, stalls: 1, ranges: []string{"", "bytes=70000-"}, want: data},
		{name: "ReadAt", read: func(fsys iceio.IO) ([]byte, error) {
			f, err := fsys.Open("gs://bucket/wh/x.bin")
			if err != nil {
				return nil, err
			}
			defer f.Close()
			buf := make([]byte, 100000)
			n, err := f.ReadAt(buf, 50000)
			return buf[:n], err
		}, cut: 30000, stalls: 2, // Open's GET (not read), then ReadAt's
			ranges: []string{"", "bytes=50000-149999", "bytes=80000-149999"}, want: data[50000:150000]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := &stallnettest.PartialServer{Data: data, Cut: tc.cut, Stalls: tc.stalls}
			hs := httptest.NewServer(srv)
			defer hs.Close()
			props := map[string]string{
				"gcs.endpoint":          hs.URL + "/storage/v1/",
				"gcs.no-auth":           "true",
				"gcs.request-timeout":   "0.3",
				"gcs.retry.num-retries": "1",
			}
			fsys, err := iceio.LoadFS(context.Background(), props, "gs://bucket/wh")
			if err != nil {
				t.Fatal(err)
			}
			got, err := tc.read(fsys)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tc.want) {
				t.Fatalf("read %d bytes, want %d (the object's)", len(got), len(tc.want))
			}
			if got := srv.Ranges(); !slices.Equal(got, tc.ranges) {
				t.Errorf("GETs asked for ranges %q, want %q (read again from the offset reached)", got, tc.ranges)
			}
		})
	}
}

// A server that answers and then never sends the body fails the read
// after gcs.retry.num-retries GETs in a row that bring no byte, instead of
// holding it (Google's client alone reads again without a bound); with no
// retries the first break fails it.
func TestStalledDownloadGivesUp(t *testing.T) {
	data := bytes.Repeat([]byte("x"), 100000)
	for _, tc := range []struct {
		retries string
		gets    int
	}{
		{retries: "2", gets: 3},
		{retries: "0", gets: 1},
	} {
		t.Run("retries="+tc.retries, func(t *testing.T) {
			srv := &stallnettest.PartialServer{Data: data, Cut: 0, Stalls: 1000} // every GET sends its headers, then stalls
			hs := httptest.NewServer(srv)
			defer hs.Close()
			props := map[string]string{
				"gcs.endpoint":          hs.URL + "/storage/v1/",
				"gcs.no-auth":           "true",
				"gcs.request-timeout":   "0.3",
				"gcs.retry.num-retries": tc.retries,
			}
			fsys, err := iceio.LoadFS(context.Background(), props, "gs://bucket/wh")
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			start := time.Now()
			go func() { _, err := fsys.(iceio.ReadFileIO).ReadFile("gs://bucket/wh/x.bin"); done <- err }()
			select {
			case err := <-done:
				want := "download from the start given up: " + strconv.Itoa(tc.gets) + " GETs in a row sent no byte of the body (gcs.retry.num-retries); the last: no data received for 300ms (gcs.request-timeout): server stalled"
				if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "gs://bucket/wh/x.bin") {
					t.Fatalf("error %v, want one naming the location and saying %q", err, want)
				}
				t.Logf("failed after %v: %v", time.Since(start).Round(time.Millisecond), err)
			case <-time.After(30 * time.Second):
				t.Fatalf("still reading after 30s (%d GETs)", len(srv.Ranges()))
			}
			if got := len(srv.Ranges()); got != tc.gets {
				t.Errorf("%d GETs, want %d", got, tc.gets)
			}
		})
	}
}

// Against fake-gcs-server behind a proxy that breaks downloads halfway:
// the read returns the object (the bound on GETs without progress does
// not get in the way of breaks that bring bytes).
func TestFakeGCSResetMidBody(t *testing.T) {
	g := objstoretest.StartGCS(t)
	g.CreateBucket(t, "lake")
	px := objstoretest.NewProxy(t, g.Endpoint)
	props := g.Props()
	props["gcs.endpoint"] = px.URL + "/storage/v1/"
	// The JSON API: fake-gcs-server serves XML reads only at its own host,
	// and the proxy keeps the Host header.
	props["gcs.usejsonapi"] = "true"
	fsys, err := iceio.LoadFS(context.Background(), props, "gs://lake/wh")
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 3<<20+17)
	for i := range data {
		data[i] = byte(i*7 + i>>11)
	}
	if err := fsys.(iceio.WriteFileIO).WriteFile("gs://lake/wh/big.bin", data); err != nil {
		t.Fatal(err)
	}
	px.SetFaults(objstoretest.FaultPlan{Rate: 1, Kinds: []objstoretest.Fault{objstoretest.ResetMidBody}, Limit: 3})
	got, err := fsys.(iceio.ReadFileIO).ReadFile("gs://lake/wh/big.bin")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("read %d bytes, not the %d written", len(got), len(data))
	}
	if n := px.Injected()[objstoretest.ResetMidBody]; n != 3 {
		t.Errorf("the proxy broke %d downloads, want 3", n)
	}
}

// An https endpoint that accepts connections and never answers the TLS
// handshake fails after the connect timeout with an error naming
// gcs.connect-timeout (Go's transport said only "TLS handshake timeout").
func TestTLSHandshakeTimeout(t *testing.T) {
	addr, _ := stallnettest.Silent(t)
	props := map[string]string{
		"gcs.endpoint":          "https://" + addr + "/storage/v1/",
		"gcs.no-auth":           "true",
		"gcs.connect-timeout":   "0.3",
		"gcs.retry.num-retries": "1",
	}
	fsys, err := iceio.LoadFS(context.Background(), props, "gs://bucket/wh")
	if err != nil {
		t.Fatal(err)
	}
	_, err = fsys.(iceio.ReadFileIO).ReadFile("gs://bucket/wh/x.json")
	if err == nil || !strings.Contains(err.Error(), "connecting to "+addr+": no answer for 300ms (gcs.connect-timeout): TLS handshake") {
		t.Errorf("error %v, want one naming gcs.connect-timeout and the TLS handshake", err)
	}
}
