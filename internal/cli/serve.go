package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/internal/safe"
	"github.com/floedata/floe/pipeline"
	"github.com/floedata/floe/pipeline/web"
)

// serveFlags are the options of the metrics endpoint and the status page.
type serveFlags struct {
	metricsAddr string
	httpAddr    string
	statusEvery time.Duration
}

func (f *serveFlags) add(c *cobra.Command, page bool) {
	fl := c.Flags()
	fl.StringVar(&f.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at /metrics, and /healthz and /readyz, on this address (a port alone, :9090, binds 127.0.0.1)")
	if page {
		fl.StringVar(&f.httpAddr, "http", "127.0.0.1:8080", "serve the status page on this address (a port alone, :8080, binds 127.0.0.1)")
	} else {
		fl.StringVar(&f.httpAddr, "http", "", "serve the status page on this address, e.g. 127.0.0.1:8080 (a port alone binds 127.0.0.1)")
	}
	fl.DurationVar(&f.statusEvery, "status-every", pipeline.DefaultMonitorEvery, "how often the status page and the lag metrics read the tables' metadata")
}

func (f *serveFlags) any() bool { return f.metricsAddr != "" || f.httpAddr != "" }

func (f *serveFlags) check() error {
	if f.any() && f.statusEvery < time.Second {
		return usagef("--status-every %s: want at least 1s", f.statusEvery)
	}
	return nil
}

// listenAddr makes an address without a host (":9090") bind the loopback
// interface: the endpoints have no authentication.
func listenAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host != "" {
		return addr
	}
	return net.JoinHostPort("127.0.0.1", port)
}

// anyPort reports whether addr asks for any free port (port 0): two such
// addresses are two listeners.
func anyPort(addr string) bool {
	_, port, err := net.SplitHostPort(addr)
	return err == nil && port == "0"
}

// loopback reports whether a listener only accepts local connections.
func loopback(a net.Addr) bool {
	tcp, ok := a.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// start serves the metrics and the status page and runs the monitor
// that feeds them, until shutdown is called.
func (f *serveFlags) start(ctx context.Context, mon *pipeline.Monitor, reg *prometheus.Registry, log *slog.Logger) (shutdown func(), err error) {
	monCtx, cancel := context.WithCancel(ctx)
	var servers []*http.Server
	var done []chan struct{}
	stopAll := func() {
		cancel()
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		for i, srv := range servers {
			_ = srv.Shutdown(sctx)
			<-done[i]
		}
	}
	serve := func(flag, addr string, h http.Handler, what, path string) error {
		ln, err := net.Listen("tcp", listenAddr(addr))
		if err != nil {
			return fmt.Errorf("--%s %s: %w", flag, addr, err)
		}
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		ch := make(chan struct{})
		servers, done = append(servers, srv), append(done, ch)
		go func() {
			defer close(ch)
			defer safe.Recover(nil)
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error(what+" server stopped", "error", err.Error())
			}
		}()
		log.Info("serving "+what, "addr", ln.Addr().String(), "path", path)
		if !loopback(ln.Addr()) {
			log.Warn("serving "+what+" beyond this machine without authentication: whoever reaches it sees the pipeline's table names, snapshot ids, commit times, row counts and error messages (no data rows)",
				"addr", ln.Addr().String())
		}
		return nil
	}
	metrics := http.NewServeMux()
	metrics.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	metrics.Handle("/healthz", web.HealthHandler())
	metrics.Handle("/readyz", web.ReadyHandler(mon))
	page := (&web.Server{Monitor: mon, Logger: log}).Handler()
	switch {
	case f.metricsAddr != "" && f.metricsAddr == f.httpAddr && !anyPort(f.httpAddr):
		both := http.NewServeMux()
		both.Handle("/metrics", metrics)
		both.Handle("/", page)
		err = serve("http", f.httpAddr, both, "the status page and metrics", "/")
	default:
		if f.metricsAddr != "" {
			err = serve("metrics-addr", f.metricsAddr, metrics, "metrics", "/metrics")
		}
		if err == nil && f.httpAddr != "" {
			err = serve("http", f.httpAddr, page, "the status page", "/")
		}
	}
	if err != nil {
		stopAll()
		return nil, err
	}
	monDone := make(chan struct{})
	go func() {
		defer close(monDone)
		defer safe.Recover(nil)
		mon.Run(monCtx)
	}()
	return func() {
		stopAll()
		<-monDone
	}, nil
}

// serveCommand is floe serve: the status page and metrics of a pipeline,
// without running builds.
func serveCommand(a *app, src pipelineSource) *cobra.Command {
	var f serveFlags
	var statusFile, logFormat string
	_, fromFile := src.(fileSource)
	example := `  floe serve pipeline.yaml
  floe serve pipeline.yaml --http 127.0.0.1:8080 --metrics-addr 127.0.0.1:9090 --status-every 1m`
	if !fromFile {
		prog := src.(programSource).prog
		example = fmt.Sprintf("  %s serve\n  %s serve --http 127.0.0.1:8080", prog, prog)
	}
	c := &cobra.Command{
		Use:   "serve " + src.usage(),
		Short: "Serve the pipeline's status page and metrics, without running builds",
		Long: `Serve a status page for people (--http, default 127.0.0.1:8080): the pipeline as a
graph colored by freshness, per transform its lag over time and the rows of its builds,
its outputs' watermarks, and the recent runs with their errors. With --metrics-addr it
also serves the lag metrics, /healthz and /readyz. It reads the tables' metadata every
--status-every and the run history that floe run writes; it runs no builds and changes
nothing. A catalog that does not answer is shown as such and retried.

Both addresses bind 127.0.0.1 unless given another host, and have no authentication:
they show table names, snapshot ids, commit times, row counts and error messages, never
data rows. SIGTERM or SIGINT stops it.`,
		Example: example,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.check(); err != nil {
				return err
			}
			if f.httpAddr == "" && f.metricsAddr == "" {
				return usagef("nothing to serve: give --http or --metrics-addr")
			}
			log, err := a.pipelineLogger(logFormat)
			if err != nil {
				return err
			}
			p, names, err := src.load(a, args)
			if err != nil {
				return err
			}
			if _, err := p.Select(names...); err != nil {
				return usageError{err}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
			defer stop()
			reg := prometheus.NewRegistry()
			reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
			runner := &pipeline.Runner{History: historyFor(p, statusFile, log), Pipeline: p}
			mon := &pipeline.Monitor{Pipeline: p, Runner: runner, Every: f.statusEvery, Metrics: pipeline.NewMetrics(reg), Logger: log,
				Open: func(ctx context.Context) (*catalog.Catalog, error) { return a.Catalog(ctx) }}
			shutdown, err := f.start(ctx, mon, reg, log)
			if err != nil {
				return err
			}
			<-ctx.Done()
			shutdown()
			log.Info("stopped serving")
			return nil
		},
	}
	if fromFile {
		c.Args = cobra.MinimumNArgs(1)
	}
	f.add(c, true)
	c.Flags().StringVar(&statusFile, "status-file", "", "run history file (default beside the pipeline file)")
	c.Flags().StringVar(&logFormat, "log-format", "text", "log format on stderr: text or json")
	return c
}
