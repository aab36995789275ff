package catalog

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
)

// Properties of REST catalogs that floe reads (iceberg-go's REST client
// has no timeout of its own, and does not retry). Durations are seconds or
// Go durations ("60", "60s", "2m").
const (
	// PropRESTRequestTimeout bounds each HTTP request to the catalog,
	// answer body included; a request still unanswered then fails as a
	// timeout (a commit timed out is an unknown outcome, resolved by
	// reloading the table). 0 disables it.
	PropRESTRequestTimeout = "rest.request-timeout"
	// PropRESTRetryBudget bounds the time floe spends retrying a catalog
	// call that failed transiently (5xx, a reset or refused connection, a
	// timeout): the opening of the catalog, table loads, namespace checks,
	// listings and creations. 0 disables the retries. Commits are retried
	// by the table's commit.retry.* properties instead.
	PropRESTRetryBudget = "rest.retry.total-timeout"

	DefaultRESTRequestTimeout = 60 * time.Second
	DefaultRetryBudget        = 2 * time.Minute
)

// openRemote opens a catalog of type rest, glue or hive with iceberg-go.
// REST catalogs get floe's HTTP transport (see restTransport) and their
// retry budget; the others are opened as iceberg-go's registry does.
func (c *Catalog) openRemote(ctx context.Context, props iceberg.Properties) (icecat.Catalog, error) {
	if c.kind != "rest" {
		return icecat.Load(ctx, c.name, props)
	}
	timeout, err := durationProp(props, PropRESTRequestTimeout, DefaultRESTRequestTimeout)
	if err != nil {
		return nil, err
	}
	c.retryBudget, err = durationProp(props, PropRESTRetryBudget, DefaultRetryBudget)
	if err != nil {
		return nil, err
	}
	c.retryBudgetSet = true
	opts, err := restOptions(props, timeout)
	if err != nil {
		return nil, err
	}
	var cat *rest.Catalog
	err = c.retry(ctx, "open the catalog", func(ctx context.Context) error {
		var err error
		cat, err = rest.NewCatalog(ctx, c.name, props.Get("uri", ""), opts...)
		return err
	})
	if err != nil {
		return nil, err
	}
	return cat, nil
}

// durationProp parses a duration property: seconds ("30", "1.5") or a Go
// duration ("30s", "2m").
func durationProp(props iceberg.Properties, key string, def time.Duration) (time.Duration, error) {
	s := strings.TrimSpace(props.Get(key, ""))
	if s == "" {
		return def, nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && f >= 0 {
		return time.Duration(f * float64(time.Second)), nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return d, nil
	}
	return 0, fmt.Errorf("%w: %s: %q is not a duration (seconds, or a Go duration such as 30s or 2m)", ErrConfig, key, s)
}

// restOptions turns catalog properties into iceberg-go REST options, as
// iceberg-go's registry does for rest.NewCatalog's properties (its
// fromProps), plus floe's transport. Every property also goes in as an
// additional property, so that after the catalog's /v1/config answer
// iceberg-go reads them all again, exactly as when opened by properties.
func restOptions(props iceberg.Properties, timeout time.Duration) ([]rest.Option, error) {
	var opts []rest.Option
	extra := iceberg.Properties{}
	var skipVerify bool
	var sigv4 bool
	var authURL, serverURI *url.URL
	for k, v := range props {
		switch k {
		case "uri", "type":
			continue
		case "token":
			opts = append(opts, rest.WithOAuthToken(v))
		case "credential":
			opts = append(opts, rest.WithCredential(v))
		case "warehouse":
			opts = append(opts, rest.WithWarehouseLocation(v))
		case "metadata_location":
			opts = append(opts, rest.WithMetadataLocation(v))
		case "scope":
			opts = append(opts, rest.WithScope(v))
		case "audience":
			opts = append(opts, rest.WithAudience(v))
		case "resource":
			opts = append(opts, rest.WithResource(v))
		case "prefix":
			opts = append(opts, rest.WithPrefix(v))
		case "rest.sigv4-enabled":
			sigv4 = strings.EqualFold(v, "true")
		case "rest.tls.skip-verify":
			skipVerify = strings.EqualFold(v, "true")
		case "rest.authorization-url", "oauth2-server-uri":
			u, err := url.Parse(v)
			if err != nil || u.Scheme == "" || u.Host == "" {
				return nil, fmt.Errorf("%w: %s: %q is not a URL", ErrConfig, k, v)
			}
			if k == "oauth2-server-uri" {
				serverURI = u
			} else {
				authURL = u
			}
		}
		if v != "" {
			extra[k] = v
		}
	}
	// oauth2-server-uri wins over its older alias, as in iceberg-go.
	switch {
	case serverURI != nil:
		opts = append(opts, rest.WithAuthURI(serverURI))
	case authURL != nil:
		opts = append(opts, rest.WithAuthURI(authURL))
	}
	if sigv4 {
		opts = append(opts, rest.WithSigV4RegionSvc(props.Get("rest.signing-region", ""), props.Get("rest.signing-name", "")))
	}
	if skipVerify {
		opts = append(opts, rest.WithTLSConfig(&tls.Config{InsecureSkipVerify: true}))
	}
	opts = append(opts, rest.WithAdditionalProps(extra),
		rest.WithTransportFactory(func(tc *tls.Config) (http.RoundTripper, func()) {
			base := http.DefaultTransport.(*http.Transport).Clone()
			base.TLSClientConfig = tc
			return &restTransport{base: base, timeout: timeout}, base.CloseIdleConnections
		}))
	return opts, nil
}

// ErrRequestTimeout is wrapped by the error of a catalog request that got
// no (complete) answer within rest.request-timeout. It also wraps
// context.DeadlineExceeded: for a commit, the outcome is unknown.
var ErrRequestTimeout = errors.New("no answer from the catalog within " + PropRESTRequestTimeout)

type requestTimeoutError struct{ d time.Duration }

func (e *requestTimeoutError) Error() string {
	return fmt.Sprintf("no answer from the catalog within %s (%s)", e.d, PropRESTRequestTimeout)
}

func (e *requestTimeoutError) Unwrap() []error {
	return []error{ErrRequestTimeout, context.DeadlineExceeded}
}

// Timeout makes the error a net.Error timeout, as http.Client's own is.
func (e *requestTimeoutError) Timeout() bool   { return true }
func (e *requestTimeoutError) Temporary() bool { return true }

// restTransport is the HTTP transport of REST catalogs: it bounds every
// request, answer body included, by the request timeout, and turns an
// error answer whose body is not an Iceberg error response (a gateway's
// HTML page, an empty body) into one that carries the HTTP status, the
// method and the URL path and the start of the body, so that iceberg-go
// still maps the status to its sentinel errors (a 5xx on a commit stays
// rest.ErrCommitStateUnknown) and the message says what answered.
type restTransport struct {
	base    http.RoundTripper
	timeout time.Duration
}

func (t *restTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	parent := req.Context()
	ctx, cancel := parent, context.CancelFunc(func() {})
	if t.timeout > 0 {
		ctx, cancel = context.WithTimeout(parent, t.timeout)
		req = req.WithContext(ctx)
	}
	timedOut := func(err error) error {
		if t.timeout > 0 && ctx.Err() != nil && parent.Err() == nil {
			return &requestTimeoutError{d: t.timeout}
		}
		return err
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		err = timedOut(err)
		cancel()
		return nil, err
	}
	body := &timeoutBody{rc: resp.Body, cancel: cancel, wrap: timedOut}
	resp.Body = body
	if resp.StatusCode >= 400 {
		if err := rewriteErrorBody(req, resp); err != nil {
			resp.Body.Close()
			return nil, err
		}
	}
	return resp, nil
}

// timeoutBody ends the request's timeout when the body is closed, and
// reports a read cut by the timeout as a timeout.
type timeoutBody struct {
	rc     io.ReadCloser
	cancel context.CancelFunc
	wrap   func(error) error
}

func (b *timeoutBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil && err != io.EOF {
		err = b.wrap(err)
	}
	return n, err
}

func (b *timeoutBody) Close() error {
	err := b.rc.Close()
	b.cancel()
	return err
}

// maxErrorBody is how much of an error answer is read to look at it.
const maxErrorBody = 1 << 20

// rewriteErrorBody replaces the body of an error answer that is not an
// Iceberg error response with one, as restTransport says.
func rewriteErrorBody(req *http.Request, resp *http.Response) error {
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
	if err != nil {
		return err
	}
	if isIcebergError(b) {
		resp.Body = io.NopCloser(bytes.NewReader(b))
		resp.ContentLength = int64(len(b))
		return nil
	}
	status := strconv.Itoa(resp.StatusCode)
	if text := http.StatusText(resp.StatusCode); text != "" {
		status += " " + text
	}
	msg := fmt.Sprintf("HTTP %s from %s %s", status, req.Method, req.URL.Path)
	if s := snippet(b); s != "" {
		msg += ", not an Iceberg error response: " + strconv.Quote(s)
	} else {
		msg += " with an empty body"
	}
	out, err := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "code": resp.StatusCode}})
	if err != nil {
		return err
	}
	resp.Body = io.NopCloser(bytes.NewReader(out))
	resp.ContentLength = int64(len(out))
	resp.Header = resp.Header.Clone()
	resp.Header.Set("Content-Type", "application/json")
	resp.Header.Set("Content-Length", strconv.Itoa(len(out)))
	return nil
}

// isIcebergError reports whether b is an error response iceberg-go makes
// sense of: {"error": {"message": ...}} or {"message": ...}.
func isIcebergError(b []byte) bool {
	var m struct {
		Error *struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		} `json:"error"`
		Message string `json:"message"`
		Type    string `json:"type"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return false
	}
	if m.Error != nil {
		return m.Error.Message != "" || m.Error.Type != ""
	}
	return m.Message != "" || m.Type != ""
}

var (
	titleRE = regexp.MustCompile(`(?is)<title[^>]*>(.*?)</title>`)
	tagRE   = regexp.MustCompile(`(?s)<[^>]*>`)
)

// snippet is the start of an error body as one short line of text: an
// HTML page's title, or its text without tags.
func snippet(b []byte) string {
	s := string(b)
	if m := titleRE.FindStringSubmatch(s); m != nil && strings.TrimSpace(m[1]) != "" {
		s = m[1]
	} else {
		s = tagRE.ReplaceAllString(s, " ")
	}
	s = strings.Join(strings.Fields(html.UnescapeString(s)), " ")
	const max = 200
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8Start(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return s
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
