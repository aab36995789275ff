package azio_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/io/gocloud/blobfs"

	_ "github.com/floedata/floe/azio"
	"github.com/floedata/floe/internal/objstoretest"
	"github.com/floedata/floe/internal/stallnet/stallnettest"
)

// Azurite's well-known development account.
const (
	devAccount = objstoretest.AzuriteAccount
	devKey     = objstoretest.AzuriteKey
)

// An Azure endpoint that accepts connections and never answers fails reads
// and writes after the request timeout and the retries, with an error
// naming the location and adls.request-timeout; before, floe waited
// forever. Each operation tries num-retries+1 times, no more.
func TestStalledServerFails(t *testing.T) {
	addr, accepted := stallnettest.Silent(t)
	props := map[string]string{
		"adls.endpoint":                     addr,
		"adls.protocol":                     "http",
		"adls.auth.shared-key.account.name": devAccount,
		"adls.auth.shared-key.account.key":  devKey,
		"adls.request-timeout":              "0.3", // seconds, as for s3.* and gcs.*
		"adls.retry.num-retries":            "1",
	}
	const wh = "abfs://lake@" + devAccount + ".dfs.core.windows.net/wh"
	fsys, err := iceio.LoadFS(context.Background(), props, wh)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, loc string
		op        func(loc string) error
	}{
		{"read", wh + "/x.json", func(loc string) error { _, err := fsys.(iceio.ReadFileIO).ReadFile(loc); return err }},
		{"write", wh + "/y.json", func(loc string) error { return fsys.(iceio.WriteFileIO).WriteFile(loc, []byte("{}")) }},
		{"remove", wh + "/z.json", func(loc string) error { return fsys.Remove(loc) }},
	} {
		before := accepted.Load()
		start := time.Now()
		done := make(chan error, 1)
		go func() { done <- tc.op(tc.loc) }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "for 300ms (adls.request-timeout)") || !strings.Contains(err.Error(), tc.loc) {
				t.Errorf("%s: error %v, want one naming %s and adls.request-timeout", tc.name, err, tc.loc)
			}
			if n := accepted.Load() - before; n != 2 {
				t.Errorf("%s: %d connections, want 2 (a try and adls.retry.num-retries=1)", tc.name, n)
			}
			t.Logf("%s failed after %v: %v", tc.name, time.Since(start).Round(time.Millisecond), err)
		case <-time.After(60 * time.Second):
			t.Fatalf("%s: still waiting after 60s", tc.name)
		}
	}
}

// num-retries 0 is one try (the SDK reads a zero MaxRetries as its default
// of 3, so the IO must not pass 0 through).
func TestNoRetries(t *testing.T) {
	addr, accepted := stallnettest.Silent(t)
	props := map[string]string{
		"adls.endpoint":                     addr,
		"adls.protocol":                     "http",
		"adls.auth.shared-key.account.name": devAccount,
		"adls.auth.shared-key.account.key":  devKey,
		"adls.request-timeout":              "200ms",
		"adls.retry.num-retries":            "0",
	}
	const wh = "wasb://lake@" + devAccount + ".blob.core.windows.net/wh"
	fsys, err := iceio.LoadFS(context.Background(), props, wh)
	if err != nil {
		t.Fatal(err)
	}
	_, err = fsys.(iceio.ReadFileIO).ReadFile(wh + "/x.json")
	if err == nil || !strings.Contains(err.Error(), "adls.request-timeout") {
		t.Fatalf("error %v, want one naming adls.request-timeout", err)
	}
	if n := accepted.Load(); n != 1 {
		t.Errorf("%d connections, want 1 (adls.retry.num-retries=0)", n)
	}
}

// An account host that does not resolve is an unreachable service, not a
// missing file: gocloud's azureblob driver maps "no such host" to NotFound,
// which would make the IO report fs.ErrNotExist (a table that is not there).
func TestUnresolvedHost(t *testing.T) {
	lctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var dnsErr *net.DNSError
	if _, err := net.DefaultResolver.LookupHost(lctx, devAccount+".invalid.test"); !errors.As(err, &dnsErr) || !dnsErr.IsNotFound {
		t.Skipf("this machine's resolver does not answer NXDOMAIN for .test names (lookup: %v)", err)
	}
	props := map[string]string{
		"adls.endpoint":                     "invalid.test", // RFC 2606: never resolves
		"adls.auth.shared-key.account.name": devAccount,
		"adls.auth.shared-key.account.key":  devKey,
		"adls.retry.num-retries":            "0",
	}
	const wh = "abfss://lake@" + devAccount + ".dfs.core.windows.net/wh"
	fsys, err := iceio.LoadFS(context.Background(), props, wh)
	if err != nil {
		t.Fatal(err)
	}
	for name, op := range map[string]func() error{
		"read": func() error { _, err := fsys.(iceio.ReadFileIO).ReadFile(wh + "/x.json"); return err },
		"stat": func() error { _, err := fsys.(iceio.StatIO).Stat(wh + "/x.json"); return err },
	} {
		err := op()
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: error %v, want one that is not fs.ErrNotExist", name, err)
			continue
		}
		var dns *net.DNSError
		if !strings.Contains(err.Error(), "cannot resolve the storage account host "+devAccount+".invalid.test") || !errors.As(err, &dns) {
			t.Errorf("%s: error %v, want a *net.DNSError naming the host", name, err)
		}
		t.Logf("%s: %v", name, err)
	}
}

func TestBadSettings(t *testing.T) {
	const wh = "abfss://lake@acct.dfs.core.windows.net/wh"
	shared := map[string]string{
		"adls.auth.shared-key.account.name": "acct",
		"adls.auth.shared-key.account.key":  devKey,
	}
	for _, tc := range []struct {
		key, value string
	}{
		{"adls.request-timeout", "soon"},
		{"adls.request-timeout", "0"},
		{"adls.connect-timeout", "-1s"},
		{"adls.retry.num-retries", "many"},
		{"adls.retry.num-retries", "-1"},
		{"adls.protocol", "ftp"},
	} {
		props := map[string]string{tc.key: tc.value}
		for k, v := range shared {
			props[k] = v
		}
		_, err := iceio.LoadFS(context.Background(), props, wh)
		if err == nil || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%s=%s: error %v, want one naming the setting", tc.key, tc.value, err)
		}
	}
	// A shared key account name without its key.
	_, err := iceio.LoadFS(context.Background(), map[string]string{"adls.auth.shared-key.account.name": "acct"}, wh)
	if err == nil || !strings.Contains(err.Error(), "adls.auth.shared-key.account.key") {
		t.Errorf("account name without key: error %v, want one naming adls.auth.shared-key.account.key", err)
	}
	// A location without a container.
	_, err = iceio.LoadFS(context.Background(), shared, "abfss://acct.dfs.core.windows.net/wh")
	if err == nil || !strings.Contains(err.Error(), "no container") || !strings.Contains(err.Error(), "abfss://acct.dfs.core.windows.net/wh") {
		t.Errorf("no container: error %v, want one naming the location", err)
	}
}

// Locations map to object keys as in iceberg-go's Azure IO; another
// container's location is refused.
func TestLocations(t *testing.T) {
	const wh = "abfss://lake@acct.dfs.core.windows.net/wh"
	props := map[string]string{
		"adls.auth.shared-key.account.name": "acct",
		"adls.auth.shared-key.account.key":  devKey,
	}
	fsys, err := iceio.LoadFS(context.Background(), props, wh)
	if err != nil {
		t.Fatal(err)
	}
	for loc, want := range map[string]error{
		"abfss://other@acct.dfs.core.windows.net/wh/x.json": blobfs.ErrUnsupportedObjectAuthority,
		"abfss://lake@acct.dfs.core.windows.net":            blobfs.ErrEmptyObjectKey,
		"gs://lake/x.json":                                  nil, // invalid location: any error
	} {
		_, err := fsys.(iceio.ReadFileIO).ReadFile(loc)
		var pe *fs.PathError
		if err == nil || !errors.As(err, &pe) || (want != nil && !errors.Is(err, want)) {
			t.Errorf("%s: error %v, want a path error %v", loc, err, want)
		}
	}
}

// A round trip against Azurite: small and large writes (a large one goes
// up in blocks), whole and ranged reads, Stat, listing, removal; a missing
// object is fs.ErrNotExist; abfs:// and wasb:// reach the same container.
func TestAzurite(t *testing.T) {
	az := objstoretest.StartAzurite(t)
	az.CreateContainer(t, "lake")
	ctx := context.Background()
	wh := az.Location("lake", "wh")
	fsys, err := iceio.LoadFS(ctx, az.Props(), wh)
	if err != nil {
		t.Fatal(err)
	}
	small := []byte(`{"format-version":2}`)
	if err := fsys.(iceio.WriteFileIO).WriteFile(wh+"/metadata/v1.json", small); err != nil {
		t.Fatal(err)
	}
	got, err := fsys.(iceio.ReadFileIO).ReadFile(wh + "/metadata/v1.json")
	if err != nil || !bytes.Equal(got, small) {
		t.Fatalf("ReadFile: %q, %v; want %q", got, err, small)
	}
	large := make([]byte, 9<<20+123)
	for i := range large {
		large[i] = byte(i*7 + i>>11)
	}
	w, err := fsys.(iceio.WriteFileIO).Create(wh + "/data/big.parquet")
	if err != nil {
		t.Fatal(err)
	}
	for rest := large; len(rest) > 0; {
		n := min(len(rest), 1<<20+17)
		if _, err := w.Write(rest[:n]); err != nil {
			t.Fatal(err)
		}
		rest = rest[n:]
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := fsys.Open(wh + "/data/big.parquet")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.Size() != int64(len(large)) {
		t.Fatalf("Stat of the large object: %v, %v; want size %d", st, err, len(large))
	}
	for _, off := range []int64{0, 5 << 20, int64(len(large)) - 100} {
		buf := make([]byte, 100)
		if n, err := f.ReadAt(buf, off); n != len(buf) || (err != nil && !errors.Is(err, io.EOF)) || !bytes.Equal(buf, large[off:off+100]) {
			t.Errorf("ReadAt %d: %d bytes, %v; or wrong bytes", off, n, err)
		}
	}
	all, err := fsys.(iceio.ReadFileIO).ReadFile(wh + "/data/big.parquet")
	if err != nil || !bytes.Equal(all, large) {
		t.Fatalf("ReadFile of the large object: %d bytes, %v; want %d equal bytes", len(all), err, len(large))
	}
	if _, err := fsys.(iceio.ReadFileIO).ReadFile(wh + "/metadata/v9.json"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile of a missing object: %v, want fs.ErrNotExist", err)
	}
	var listed []string
	err = fsys.(iceio.ListableIO).WalkDir(wh, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			listed = append(listed, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(listed)
	if want := []string{wh + "/data/big.parquet", wh + "/metadata/v1.json"}; !slices.Equal(listed, want) {
		t.Errorf("WalkDir listed %q, want %q", listed, want)
	}
	if names := az.List(t, "lake", "wh/"); len(names) != 2 {
		t.Errorf("Azurite holds %q under wh/, want the 2 objects written", names)
	}
	// wasb:// (the blob endpoint's name) reaches the same container.
	whb := "wasb://lake@" + objstoretest.AzuriteAccount + ".blob.core.windows.net/wh"
	fsb, err := iceio.LoadFS(ctx, az.Props(), whb)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := fsb.(iceio.ReadFileIO).ReadFile(whb + "/metadata/v1.json"); err != nil || !bytes.Equal(got, small) {
		t.Errorf("wasb ReadFile: %q, %v; want %q", got, err, small)
	}
	if err := fsys.Remove(wh + "/metadata/v1.json"); err != nil {
		t.Fatal(err)
	}
	if _, err := fsys.(iceio.StatIO).Stat(wh + "/metadata/v1.json"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Stat after Remove: %v, want fs.ErrNotExist", err)
	}
}

// An https endpoint that accepts connections and never answers the TLS
// handshake fails after the connect timeout and the retries with an error
// naming the location and adls.connect-timeout (Go's transport said only
// "TLS handshake timeout").
func TestTLSHandshakeTimeout(t *testing.T) {
	addr, _ := stallnettest.Silent(t)
	props := map[string]string{
		"adls.endpoint":                     addr,
		"adls.protocol":                     "https",
		"adls.auth.shared-key.account.name": devAccount,
		"adls.auth.shared-key.account.key":  devKey,
		"adls.connect-timeout":              "0.3",
		"adls.retry.num-retries":            "1",
	}
	const wh = "abfss://lake@" + devAccount + ".dfs.core.windows.net/wh"
	fsys, err := iceio.LoadFS(context.Background(), props, wh)
	if err != nil {
		t.Fatal(err)
	}
	_, err = fsys.(iceio.ReadFileIO).ReadFile(wh + "/x.json")
	if err == nil || !strings.Contains(err.Error(), "no answer for 300ms (adls.connect-timeout): TLS handshake") || !strings.Contains(err.Error(), wh+"/x.json") {
		t.Fatalf("error %v, want one naming the location, adls.connect-timeout and the TLS handshake", err)
	}
}
