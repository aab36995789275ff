package stallnettest

import (
	"bytes"
	"errors"
	"net/http"
	"sync"
	"time"
)

// PartialServer is an http.Handler that serves Data at every path, with
// Range requests (206), and whose first Stalls GETs send the headers of
// the whole answer and its first Cut bytes, then nothing until the client
// goes away: a download that stalls in the middle of its body. Later GETs
// are answered in full, so a client that reads again from the offset it
// reached gets the rest.
type PartialServer struct {
	Data   []byte
	Cut    int
	Stalls int
	// RangeHeader is the request header that carries the range when not
	// Range (Azure's x-ms-range).
	RangeHeader string
	// Header is added to every answer (the headers a client needs), where
	// a wrapping handler has not set them already.
	Header http.Header

	mu     sync.Mutex
	ranges []string
	gets   int
}

// Ranges are the ranges the GETs asked for, in order ("" for none).
func (s *PartialServer) Ranges() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.ranges...)
}

func (s *PartialServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	for k, vs := range s.Header {
		if _, set := w.Header()[k]; !set {
			w.Header()[k] = vs
		}
	}
	if s.RangeHeader != "" {
		r.Header.Set("Range", r.Header.Get(s.RangeHeader))
	}
	if r.Method != http.MethodGet {
		http.ServeContent(w, r, "", time.Unix(0, 0), bytes.NewReader(s.Data))
		return
	}
	s.mu.Lock()
	s.gets++
	stall := s.gets <= s.Stalls
	s.ranges = append(s.ranges, r.Header.Get("Range"))
	s.mu.Unlock()
	if stall {
		w = &cutWriter{ResponseWriter: w, left: s.Cut, r: r}
	}
	http.ServeContent(w, r, "", time.Unix(0, 0), bytes.NewReader(s.Data))
}

// cutWriter writes left bytes of a body, then stalls until the request
// ends.
type cutWriter struct {
	http.ResponseWriter
	left int
	r    *http.Request
}

func (c *cutWriter) Write(p []byte) (int, error) {
	if len(p) <= c.left {
		c.left -= len(p)
		return c.ResponseWriter.Write(p)
	}
	n, err := c.ResponseWriter.Write(p[:c.left])
	c.left = 0
	if err != nil {
		return n, err
	}
	http.NewResponseController(c.ResponseWriter).Flush()
	<-c.r.Context().Done()
	return n, errors.New("stallnettest: stalled the answer")
}
