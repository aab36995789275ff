package cli

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go/table"
	"github.com/mattn/go-isatty"
	"github.com/schollz/progressbar/v3"

	"github.com/floedata/floe/catalog"
)

var strType = arrow.BinaryTypes.String
var i64Type = arrow.PrimitiveTypes.Int64

// loadTable resolves NS.T and loads it.
func (a *app) loadTable(ctx context.Context, name string) (*catalog.Catalog, table.Identifier, *table.Table, error) {
	ident, err := catalog.ParseTableName(name)
	if err != nil {
		return nil, nil, nil, usageError{err}
	}
	cat, err := a.Catalog(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	tbl, err := cat.Load(ctx, ident)
	if err != nil {
		return nil, nil, nil, err
	}
	return cat, ident, tbl, nil
}

// parseTime parses epoch milliseconds or an ISO-8601 date or timestamp
// (UTC unless it carries a zone) into epoch milliseconds.
func parseTime(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	layouts := []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00",
		"2006-01-02 15:04:05.999999999", "2006-01-02T15:04Z07:00", "2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02"}
	for _, l := range layouts {
		if t, err := time.ParseInLocation(l, s, time.UTC); err == nil {
			return t.UnixMilli(), nil
		}
	}
	return 0, usagef("bad time %q: want epoch milliseconds or ISO-8601 such as 2024-05-01T12:00:00Z", s)
}

// progress shows a spinner with a count on stderr when it is a terminal
// and --quiet is off; elsewhere it does nothing.
type progress struct{ bar *progressbar.ProgressBar }

func (a *app) progress(what string) *progress {
	f, ok := a.stderr.(*os.File)
	if a.quiet || !ok || !isatty.IsTerminal(f.Fd()) {
		return &progress{}
	}
	return &progress{bar: progressbar.NewOptions64(-1,
		progressbar.OptionSetWriter(f),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(),
		progressbar.OptionSetItsString("rows"),
		progressbar.OptionShowIts(),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)}
}

func (p *progress) add(n int64) {
	if p.bar != nil {
		_ = p.bar.Add64(n)
	}
}

func (p *progress) done() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}

func fmtTime(ms int64) string {
	return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano)
}

func plural(n int64, word string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, word)
	}
	return fmt.Sprintf("%d %ss", n, word)
}
