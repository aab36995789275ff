package azio_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	iceio "github.com/apache/iceberg-go/io"

	"github.com/floedata/floe/internal/objstoretest"
	"github.com/floedata/floe/internal/stallnet/stallnettest"
)

// azureBlob is a PartialServer answering as Azure's Get Blob does (the
// headers the SDK and gocloud's driver read).
func azureBlob(data []byte, cut, stalls int) *stallnettest.PartialServer {
	h := http.Header{}
	h.Set("x-ms-blob-type", "BlockBlob")
	h.Set("ETag", `"0x8D0000000000001"`)
	h.Set("Last-Modified", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Format(http.TimeFormat))
	return &stallnettest.PartialServer{Data: data, Cut: cut, Stalls: stalls, RangeHeader: "x-ms-range", Header: h}
}

func partialProps(url string, retries string) map[string]string {
	return map[string]string{
		"adls.endpoint":                     strings.TrimPrefix(url, "http://"),
		"adls.protocol":                     "http",
		"adls.auth.shared-key.account.name": devAccount,
		"adls.auth.shared-key.account.key":  devKey,
		"adls.request-timeout":              "0.3",
		"adls.retry.num-retries":            retries,
	}
}

const partialWH = "abfs://lake@" + devAccount + ".dfs.core.windows.net/wh"

// A download that stalls in the middle of its body is read again from the
// offset it reached, with the first answer's ETag, and the read returns
// the whole object.
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
			return fsys.(iceio.ReadFileIO).ReadFile(partialWH + "/x.bin")
		}, cut: 70000, stalls: 2, ranges: []string{"", "bytes=70000-", "bytes=140000-"}, want: data},
		{name: "ReadAt", read: func(fsys iceio.IO) ([]byte, error) {
			f, err := fsys.Open(partialWH + "/x.bin")
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
			srv := azureBlob(data, tc.cut, tc.stalls)
			hs := httptest.NewServer(srv)
			defer hs.Close()
			fsys, err := iceio.LoadFS(context.Background(), partialProps(hs.URL, "2"), partialWH)
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
// after adls.retry.num-retries ranged GETs in a row with no progress,
// instead of hanging it; with no retries the first break fails it.
func TestStalledDownloadGivesUp(t *testing.T) {
	data := bytes.Repeat([]byte("x"), 100000)
	for _, tc := range []struct {
		retries string
		ranges  []string
	}{
		{retries: "2", ranges: []string{"", "bytes=0-", "bytes=0-"}},
		{retries: "0", ranges: []string{""}},
	} {
		t.Run("retries="+tc.retries, func(t *testing.T) {
			srv := azureBlob(data, 0, 1000) // every GET sends its headers, then stalls
			hs := httptest.NewServer(srv)
			defer hs.Close()
			fsys, err := iceio.LoadFS(context.Background(), partialProps(hs.URL, tc.retries), partialWH)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err = fsys.(iceio.ReadFileIO).ReadFile(partialWH + "/x.bin")
			took := time.Since(start)
			if err == nil || !strings.Contains(err.Error(), "no data received for 300ms (adls.request-timeout)") || !strings.Contains(err.Error(), partialWH+"/x.bin") {
				t.Fatalf("error %v, want one naming the location and adls.request-timeout", err)
			}
			if tc.retries != "0" && !strings.Contains(err.Error(), "download broken at byte 0, read again 2 times from there with no progress (adls.retry.num-retries)") {
				t.Errorf("error %v, want one naming the offset and adls.retry.num-retries", err)
			}
			if got := srv.Ranges(); !slices.Equal(got, tc.ranges) {
				t.Errorf("GETs asked for ranges %q, want %q", got, tc.ranges)
			}
			if took > 20*time.Second {
				t.Errorf("took %v", took)
			}
			t.Logf("failed after %v: %v", took.Round(time.Millisecond), err)
		})
	}
}

// A blob replaced between the broken GET and the ranged one (another
// ETag) fails the read, naming the change, instead of splicing two
// versions.
func TestStalledDownloadOfChangedBlob(t *testing.T) {
	srv := azureBlob(bytes.Repeat([]byte("v"), 100000), 30000, 1)
	var gets atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && gets.Add(1) > 1 {
			w.Header().Set("ETag", `"0x8D0000000000002"`) // replaced after the first GET
		}
		srv.ServeHTTP(w, r)
	}))
	defer hs.Close()
	fsys, err := iceio.LoadFS(context.Background(), partialProps(hs.URL, "2"), partialWH)
	if err != nil {
		t.Fatal(err)
	}
	_, err = fsys.(iceio.ReadFileIO).ReadFile(partialWH + "/x.bin")
	if err == nil || !strings.Contains(err.Error(), `download broken at byte 30000`) || !strings.Contains(err.Error(), `the blob changed while it was read (ETag "0x8D0000000000001"): 412`) {
		t.Fatalf("error %v, want one saying the blob changed", err)
	}
	if got, want := srv.Ranges(), []string{"", "bytes=30000-"}; !slices.Equal(got, want) {
		t.Errorf("GETs asked for ranges %q, want %q", got, want)
	}
}

// Against Azurite behind a proxy that breaks downloads halfway: the
// ranged GETs that resume them are signed (shared key) and accepted, and
// the read returns the blob.
func TestAzuriteResetMidBody(t *testing.T) {
	az := objstoretest.StartAzurite(t)
	az.CreateContainer(t, "lake")
	px := objstoretest.NewProxy(t, "http://"+az.Endpoint)
	props := az.Props()
	props["adls.endpoint"] = strings.TrimPrefix(px.URL, "http://")
	wh := az.Location("lake", "wh")
	fsys, err := iceio.LoadFS(context.Background(), props, wh)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 3<<20+17)
	for i := range data {
		data[i] = byte(i*7 + i>>11)
	}
	if err := fsys.(iceio.WriteFileIO).WriteFile(wh+"/big.bin", data); err != nil {
		t.Fatal(err)
	}
	px.SetFaults(objstoretest.FaultPlan{Rate: 1, Kinds: []objstoretest.Fault{objstoretest.ResetMidBody}, Limit: 3})
	got, err := fsys.(iceio.ReadFileIO).ReadFile(wh + "/big.bin")
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
