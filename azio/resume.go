package azio

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// resumeDownloads is a per-call pipeline policy that resumes a blob
// download whose body breaks in the middle (a stall past
// adls.request-timeout, a reset, a connection closed early): the body it
// returns reads the rest with a ranged GET from the offset reached
// (x-ms-range, If-Match the first answer's ETag, so a blob replaced in
// between fails instead of being spliced), as floe's S3 IO does. The
// gocloud driver under iceberg-go's blob IO reads the SDK's raw body, with
// no retry of its own. The ranged GET goes through the rest of the
// pipeline (the retry policy, signing), so it is signed and retried like
// the first. At most maxTries ranged GETs in a row that bring no new byte:
// a server that answers and then never sends the body fails the read
// instead of hanging it.
type resumeDownloads struct{ maxTries int }

func (p resumeDownloads) Do(req *policy.Request) (*http.Response, error) {
	resp, err := req.Next()
	if err != nil || p.maxTries <= 0 || !isDownload(req.Raw(), resp) {
		return resp, err
	}
	// The SDK sets x-ms-range by its lower-case name, which Header.Get
	// (canonical names) does not find.
	//lint:ignore SA1008 the SDK's own key is not canonical
	start, end, ok := parseRange(strings.Join(req.Raw().Header["x-ms-range"], ","))
	if !ok {
		return resp, nil
	}
	resp.Body = &resumingBody{
		req: req, body: resp.Body, start: start, end: end,
		etag: resp.Header.Get("ETag"), maxTries: p.maxTries,
	}
	return resp, nil
}

// isDownload reports whether resp answers a Get Blob (a GET of a blob, no
// comp= operation) with its content.
func isDownload(req *http.Request, resp *http.Response) bool {
	return req.Method == http.MethodGet && req.URL.Query().Get("comp") == "" &&
		(resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusPartialContent) &&
		resp.Header.Get("x-ms-blob-type") != ""
}

// parseRange reads an x-ms-range header as the SDK writes it: bytes=a- or
// bytes=a-b (end -1 for none); no header is the whole blob.
func parseRange(v string) (start, end int64, ok bool) {
	if v == "" {
		return 0, -1, true
	}
	from, to, found := strings.Cut(strings.TrimPrefix(v, "bytes="), "-")
	if !found || !strings.HasPrefix(v, "bytes=") {
		return 0, 0, false
	}
	start, err := strconv.ParseInt(from, 10, 64)
	if err != nil || start < 0 {
		return 0, 0, false
	}
	if to == "" {
		return start, -1, true
	}
	end, err = strconv.ParseInt(to, 10, 64)
	if err != nil || end < start {
		return 0, 0, false
	}
	return start, end, true
}

// resumingBody is a download's body that reads again from the offset
// reached when it breaks.
type resumingBody struct {
	req        *policy.Request // the download, positioned after this policy
	body       io.ReadCloser   // nil after a break, until read again
	start, end int64           // the range asked for (end -1: to the end)
	seen       int64           // bytes delivered
	etag       string
	maxTries   int
	tries      int   // ranged GETs since the last byte arrived
	broken     error // the break being resumed
}

func (b *resumingBody) Read(p []byte) (int, error) {
	for {
		if b.body == nil {
			if b.tries >= b.maxTries {
				return 0, fmt.Errorf("download broken at byte %d, read again %d times from there with no progress (%s): %w",
					b.start+b.seen, b.tries, KeyNumRetries, b.broken)
			}
			b.tries++
			if err := b.reopen(); err != nil {
				return 0, fmt.Errorf("download broken at byte %d (%w); reading again from there: %w", b.start+b.seen, b.broken, err)
			}
		}
		n, err := b.body.Read(p)
		b.seen += int64(n)
		if n > 0 {
			b.tries = 0
		}
		if err == nil || errors.Is(err, io.EOF) || !b.resumable(err) {
			return n, err
		}
		b.body.Close()
		b.body, b.broken = nil, err
		if n > 0 {
			return n, nil
		}
	}
}

// resumable reports whether a body that failed with err may be read again:
// a network error (a stall, a reset) or a body cut short, while the
// download's context is live.
func (b *resumingBody) resumable(err error) bool {
	if b.req.Raw().Context().Err() != nil {
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF)
}

// reopen asks for the rest of the range, from the offset reached.
func (b *resumingBody) reopen() error {
	from := b.start + b.seen
	rng := "bytes=" + strconv.FormatInt(from, 10) + "-"
	if b.end >= 0 {
		rng += strconv.FormatInt(b.end, 10)
	}
	r := b.req.Clone(b.req.Raw().Context())
	r.Raw().Header["x-ms-range"] = []string{rng}
	if b.etag != "" {
		r.Raw().Header["If-Match"] = []string{b.etag}
	}
	resp, err := r.Next()
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusPartialContent {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		resp.Body.Close()
		if resp.StatusCode == http.StatusPreconditionFailed {
			return fmt.Errorf("the blob changed while it was read (ETag %s): %s", b.etag, resp.Status)
		}
		return fmt.Errorf("ranged GET %s: %s: %s", rng, resp.Status, strings.TrimSpace(string(msg)))
	}
	b.body = resp.Body
	return nil
}

func (b *resumingBody) Close() error {
	if b.body == nil {
		return nil
	}
	return b.body.Close()
}
