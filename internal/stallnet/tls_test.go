package stallnet_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/floedata/floe/internal/stallnet"
	"github.com/floedata/floe/internal/stallnet/stallnettest"
)

// transport is an HTTP transport dialling through stallnet, as the object
// store IOs make theirs.
func transport(connect time.Duration) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = stallnet.Dialer(connect, "x.connect-timeout", 5*time.Second, "x.request-timeout")
	t.DialTLSContext = stallnet.TLSDialer(t, t.DialContext, connect, "x.connect-timeout")
	return t
}

// A server that accepts the connection and never answers the TLS
// handshake fails the request after the connect timeout with a
// ConnectError naming the setting; the transport's own handshake timeout
// said only "net/http: TLS handshake timeout".
func TestTLSHandshakeTimeout(t *testing.T) {
	addr, _ := stallnettest.Silent(t)
	client := &http.Client{Transport: transport(300 * time.Millisecond)}
	start := time.Now()
	_, err := client.Get("https://" + addr + "/bucket/key")
	took := time.Since(start)
	var ce *stallnet.ConnectError
	if !errors.As(err, &ce) {
		t.Fatalf("error %v (%T), want a *stallnet.ConnectError", err, err)
	}
	for _, want := range []string{"connecting to " + addr, "no answer for 300ms (x.connect-timeout)", "TLS handshake"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("error %v is not a net timeout (the SDKs retry those)", err)
	}
	if took > 10*time.Second {
		t.Errorf("failed after %v with a 300ms connect timeout", took)
	}
	t.Logf("failed after %v: %v", took.Round(time.Millisecond), err)
}

// Through the TLS dialer a TLS server is reached with the transport's TLS
// settings (its root CAs here) and HTTP/2 is negotiated as the transport
// configures it; a certificate the settings do not trust is refused.
func TestTLSDialerKeepsSettings(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.Proto)
	}))
	srv.EnableHTTP2 = true
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake below
	srv.StartTLS()
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	tr := transport(5 * time.Second)
	tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	resp, err := (&http.Client{Transport: tr}).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "HTTP/2.0" {
		t.Errorf("server saw %q, want HTTP/2.0 (negotiated by the transport)", body)
	}
	if _, err := (&http.Client{Transport: transport(5 * time.Second)}).Get(srv.URL); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("untrusted certificate: error %v, want a certificate error", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	if _, err := (&http.Client{Transport: transport(5 * time.Second)}).Do(req); err == nil || errors.As(err, new(*stallnet.ConnectError)) {
		t.Errorf("cancelled request: error %v, want the context's, naming no setting", err)
	}
}
