package gcsio

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"strings"

	iceio "github.com/apache/iceberg-go/io"
)

// forbidden turns a 403 answer into an error of its own before Google's
// client and gocloud see it. gocloud's GCS driver codes every 403 as
// NotFound (a List that is denied looks like one of a missing bucket),
// and blobfs reports that as fs.ErrNotExist: a metadata file or a Delta
// log that could not be read for want of permission read as absent, and
// a denied delete as done. The error is not one Google's client retries.
type forbidden struct{ base http.RoundTripper }

func (f forbidden) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := f.base.RoundTrip(r)
	if err != nil || resp.StatusCode != http.StatusForbidden {
		return resp, err
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<10))
	resp.Body.Close()
	return nil, &ForbiddenError{Message: serverMessage(body)}
}

// ForbiddenError is a request the server refused with HTTP 403.
type ForbiddenError struct {
	Message string // the server's, if any
}

func (e *ForbiddenError) Error() string {
	s := "access denied (HTTP 403)"
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s + fmt.Sprintf(": the credentials (%s, %s, %s, or Application Default Credentials) lack permission for this location",
		iceio.GCSKeyPath, iceio.GCSJSONKey, iceio.GCSOAuthToken)
}

// serverMessage is the message of a GCS error body: the JSON API's
// {"error": {"message": ...}}, the XML API's <Error><Message>, else the
// body's first line.
func serverMessage(body []byte) string {
	var j struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &j) == nil && j.Error.Message != "" {
		return j.Error.Message
	}
	var x struct {
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	}
	if xml.Unmarshal(body, &x) == nil && (x.Code != "" || x.Message != "") {
		return strings.TrimSpace(x.Code + " " + x.Message)
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(body)), "\n")
	if len(line) > 200 {
		line = line[:200] + "..."
	}
	return line
}
