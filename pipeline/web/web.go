// Package web serves a pipeline's status page: the pipeline as a graph
// (source tables, transforms and outputs, colored by freshness), per
// transform plots of its lag over time and of the rows of its builds, its
// outputs' watermarks, and the recent runs with their errors. The page is
// rendered on the server from templates embedded in the binary, with
// inline SVG plots: no script, no external resource, nothing to build. It
// is read-only and shows metadata only (table names, snapshot ids, times,
// counts, errors), never data rows.
//
// The page reads the last report of a pipeline.Monitor, so requests never
// reach the catalog; /healthz and /readyz answer for load balancers and
// orchestrators.
package web

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"time"

	"github.com/floedata/floe/pipeline"
)

//go:embed assets/page.html assets/style.css
var assets embed.FS

var page = template.Must(template.New("page.html").Funcs(template.FuncMap{
	"css": func() template.CSS { return template.CSS(mustAsset("assets/style.css")) },
}).ParseFS(assets, "assets/page.html"))

func mustAsset(name string) string {
	b, err := assets.ReadFile(name)
	if err != nil {
		panic(err) // embedded at build time: cannot be missing
	}
	return string(b)
}

// Server serves the status page of the pipeline its Monitor samples. Its
// handler serves requests concurrently; it reads the Monitor's samples and
// never opens a table or changes anything.
type Server struct {
	Monitor *pipeline.Monitor
	// Refresh is how often the page reloads itself (0 = the monitor's
	// sampling interval).
	Refresh time.Duration
	// Logger gets rendering errors (nil = slog.Default()).
	Logger *slog.Logger
}

// Handler routes / (the page), /healthz and /readyz; other paths are 404
// and methods other than GET and HEAD 405.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/", s.servePage)
	mux.Handle("/healthz", HealthHandler())
	mux.Handle("/readyz", ReadyHandler(s.Monitor))
	return readOnly(mux)
}

// readOnly refuses methods that could change something, and sets headers
// that keep the page self-contained.
func readOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "read-only: GET or HEAD", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		h.ServeHTTP(w, r)
	})
}

// HealthHandler answers 200 while the process serves requests.
func HealthHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
}

// ReadyHandler answers 200 when the monitor's last sample reached the
// catalog, 503 with the reason otherwise.
func ReadyHandler(m *pipeline.Monitor) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		ready, why := m.Ready()
		if !ready {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "not ready: "+why)
			return
		}
		fmt.Fprintln(w, "ready")
	})
}

func (s *Server) servePage(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		http.NotFound(w, r)
		return
	}
	refresh := s.Refresh
	if refresh <= 0 {
		refresh = s.Monitor.Every
	}
	if refresh <= 0 {
		refresh = pipeline.DefaultMonitorEvery
	}
	view := build(s.Monitor.Pipeline, s.Monitor.Last(), refresh)
	var buf bytes.Buffer
	if err := page.Execute(&buf, view); err != nil {
		log := s.Logger
		if log == nil {
			log = slog.Default()
		}
		log.Error("status page", "error", err.Error())
		http.Error(w, "cannot render the status page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(buf.Bytes())
}
