package azio_test

import (
	"context"
	"strings"
	"testing"
	"time"

	iceio "github.com/apache/iceberg-go/io"

	"github.com/floedata/floe/internal/stallnet/stallnettest"
)

// An endpoint that does not complete the connection fails after the
// connect timeout and the retries, with an error naming adls.connect-timeout.
func TestConnectTimeout(t *testing.T) {
	addr := stallnettest.FullBacklog(t)
	props := map[string]string{
		"adls.endpoint":                     addr,
		"adls.protocol":                     "http",
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
	start := time.Now()
	_, err = fsys.(iceio.ReadFileIO).ReadFile(wh + "/x.json")
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "no answer for 300ms (adls.connect-timeout)") || !strings.Contains(err.Error(), wh+"/x.json") {
		t.Fatalf("error %v, want one naming the location and adls.connect-timeout", err)
	}
	if took > 20*time.Second {
		t.Errorf("took %v with a 0.3s connect timeout and one retry", took)
	}
	t.Logf("failed after %v: %v", took.Round(time.Millisecond), err)
}
