// Package gcsio registers floe's Google Cloud Storage file IO with
// iceberg-go's IO registry for the gs scheme, in place of iceberg-go's own:
// the same settings (gcs.endpoint, gcs.keypath, gcs.jsonkey, gcs.credtype,
// gcs.oauth2.token, gcs.no-auth, gcs.usejsonapi), plus a request timeout
// and bounded retries, so that a server that accepts a connection and
// never answers fails the command with an error naming the setting instead
// of hanging it (iceberg-go's IO uses Go's default transport, which has no
// read timeout, and Google's client retries idempotent requests until its
// context ends, which for floe's file IO is never).
//
//	gcs.request-timeout      a request that sends or receives nothing for this long fails (default 30s)
//	gcs.connect-timeout      connecting (TCP and TLS) (default 10s)
//	gcs.retry.num-retries    retries of an idempotent request after a transient failure (default 5)
//
// A download whose body breaks in the middle is read again from the
// offset reached by Google's client; gcsio bounds that to
// gcs.retry.num-retries GETs in a row with no byte of body (resume.go),
// which the client does not.
//
// Import it for its side effect where the program is assembled:
//
//	import _ "github.com/floedata/floe/gcsio"
//
// The floe binary does (cmd/floe, unless built with -tags floe_no_gcs).
package gcsio

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/storage"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/io/gocloud/blobfs"
	icegcs "github.com/apache/iceberg-go/io/gocloud/gcs" // registered first, replaced below
	"github.com/googleapis/gax-go/v2"
	"gocloud.dev/blob/gcsblob"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
	"google.golang.org/api/option"

	"github.com/floedata/floe/internal/blobname"
	"github.com/floedata/floe/internal/stallnet"
)

// Settings of floe's GCS IO beside iceberg-go's gcs.* keys.
const (
	KeyRequestTimeout = "gcs.request-timeout"
	KeyConnectTimeout = "gcs.connect-timeout"
	KeyNumRetries     = "gcs.retry.num-retries"
)

// Defaults of the settings.
const (
	DefaultRequestTimeout = 30 * time.Second
	DefaultConnectTimeout = 10 * time.Second
	DefaultNumRetries     = 5
)

func init() {
	iceio.Unregister("gs")
	iceio.Register("gs", newGCSIO)
}

func newGCSIO(ctx context.Context, parsed *url.URL, props map[string]string) (iceio.IO, error) {
	if parsed.Host == "" {
		return nil, fmt.Errorf("%s: no bucket in the location", parsed.String())
	}
	stall, err := stallnet.Duration(props, KeyRequestTimeout, DefaultRequestTimeout)
	if err != nil {
		return nil, err
	}
	connect, err := stallnet.Duration(props, KeyConnectTimeout, DefaultConnectTimeout)
	if err != nil {
		return nil, err
	}
	retries := DefaultNumRetries
	if v := strings.TrimSpace(props[KeyNumRetries]); v != "" {
		if retries, err = strconv.Atoi(v); err != nil || retries < 0 {
			return nil, fmt.Errorf("%s %q: want a number of retries (0 or more)", KeyNumRetries, v)
		}
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = stallnet.Dialer(connect, KeyConnectTimeout, stall, KeyRequestTimeout)
	t.DialTLSContext = stallnet.TLSDialer(t, t.DialContext, connect, KeyConnectTimeout)
	t.TLSHandshakeTimeout = connect // TLS through a proxy's tunnel
	var rt http.RoundTripper = &boundedReopen{base: forbidden{t}, maxRetries: retries}
	creds, err := credentials(ctx, props)
	if err != nil {
		return nil, err
	}
	if creds != nil {
		rt = &oauth2.Transport{Source: creds.TokenSource, Base: rt}
	}
	opts := append(icegcs.ParseGCSConfig(props).ClientOptions, option.WithHTTPClient(&http.Client{Transport: rt}))
	client, err := storage.NewClient(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("gs://%s: %w", parsed.Host, err)
	}
	client.SetRetry(storage.WithMaxAttempts(retries+1),
		storage.WithBackoff(gax.Backoff{Initial: 100 * time.Millisecond, Max: 20 * time.Second, Multiplier: 2}))
	bucket, err := gcsblob.OpenBucket(ctx, nil, parsed.Host, &gcsblob.Options{Client: client})
	if err != nil {
		return nil, fmt.Errorf("gs://%s: %w", parsed.Host, err)
	}
	return blobname.FileIO{FileIO: blobfs.New(ctx, bucket, blobfs.DefaultObjectLocationExtractor(parsed.Host, "gs"))}, nil
}

// gcsScope is the scope iceberg-go's GCS IO asks keys for.
const gcsScope = "https://www.googleapis.com/auth/devstorage.read_write"

// credentials reads the gcs.* credential settings as iceberg-go's GCS IO
// does: gcs.no-auth (anonymous, nil), a vended gcs.oauth2.token, a key
// (gcs.jsonkey, gcs.keypath, of type gcs.credtype), else Application
// Default Credentials.
func credentials(ctx context.Context, props map[string]string) (*google.Credentials, error) {
	if noAuth, err := strconv.ParseBool(props[iceio.GCSNoAuth]); err == nil && noAuth {
		return nil, nil
	}
	if tok := props[iceio.GCSOAuthToken]; tok != "" {
		t := &oauth2.Token{AccessToken: tok}
		if ms, err := strconv.ParseInt(props[iceio.GCSOAuthExpiresAt], 10, 64); err == nil {
			t.Expiry = time.UnixMilli(ms)
		}
		return &google.Credentials{TokenSource: oauth2.StaticTokenSource(t)}, nil
	}
	credType := google.ServiceAccount
	if v := props[iceio.GCSCredType]; v != "" {
		switch v {
		case "service_account", "authorized_user", "impersonated_service_account", "external_account":
			credType = google.CredentialsType(v)
		}
	}
	parse := func(data []byte, source string) (*google.Credentials, error) {
		creds, err := google.CredentialsFromJSONWithType(ctx, data, credType, gcsScope)
		if err != nil {
			return nil, fmt.Errorf("gcs: parsing %s: set %s if the key is not a service account: %w", source, iceio.GCSCredType, err)
		}
		return creds, nil
	}
	if key := props[iceio.GCSJSONKey]; key != "" {
		return parse([]byte(key), iceio.GCSJSONKey)
	}
	if path := props[iceio.GCSKeyPath]; path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("gcs: reading %s %q: %w", iceio.GCSKeyPath, path, err)
		}
		return parse(data, fmt.Sprintf("%s %q", iceio.GCSKeyPath, path))
	}
	creds, err := google.FindDefaultCredentials(ctx, "https://www.googleapis.com/auth/cloud-platform")
	if err != nil {
		return nil, fmt.Errorf("gcs: no credentials found; set %s=true for anonymous/public bucket access: %w", iceio.GCSNoAuth, err)
	}
	return creds, nil
}
