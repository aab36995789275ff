package objstore

import (
	"net/http"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"

	"github.com/floedata/floe/internal/stallnet"
)

// StallError reports a request that made no progress for the request
// timeout (s3.request-timeout).
type StallError = stallnet.Error

// Transport tuning, as iceberg-go's S3 IO has it: many parallel transfers to
// one host.
const (
	maxIdleConns        = 256
	maxIdleConnsPerHost = 256
	maxConnsPerHost     = 2048
	idleConnTimeout     = 90 * time.Second
)

// newHTTPClient returns the HTTP client of an s3:// IO: the AWS SDK's client
// with connect and stall timeouts, an optional proxy, and no SDK read timeout
// (the stall timeout covers reads and writes).
func newHTTPClient(s s3Settings) *awshttp.BuildableClient {
	dial := stallnet.Dialer(s.connectTO, KeyConnectTimeout, s.requestTO, KeyRequestTimeout)
	return awshttp.NewBuildableClient().
		WithReadTimeout(0).
		WithTransportOptions(func(t *http.Transport) {
			t.MaxIdleConns = maxIdleConns
			t.MaxIdleConnsPerHost = maxIdleConnsPerHost
			t.MaxConnsPerHost = maxConnsPerHost
			t.IdleConnTimeout = idleConnTimeout
			t.TLSHandshakeTimeout = s.connectTO
			t.ResponseHeaderTimeout = 0 // the stall timeout bounds the wait
			if s.proxy != nil {
				t.Proxy = http.ProxyURL(s.proxy)
			}
			t.DialContext = dial
		})
}
