package catalog

import (
	"context"
	"sync"

	iceberg "github.com/apache/iceberg-go"
	icecat "github.com/apache/iceberg-go/catalog"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// Wrap puts layers between floe and what it talks to: Catalog wraps the
// iceberg-go catalog every load, create and commit goes through, IO wraps
// the file IO of every table floe loads (data, delete, manifest and
// manifest-list files; metadata files are the catalog's). Either may be
// nil. It is the seam the fault-injection tests use (internal/faultcat,
// internal/faultfs); call it before the catalog is used.
type Wrap struct {
	Catalog func(icecat.Catalog) icecat.Catalog
	IO      func(iceio.IO) iceio.IO
}

// Wrap installs w (see type Wrap). Wrapping twice stacks the layers.
func (c *Catalog) Wrap(w Wrap) {
	// Loads must go through the layers: no table loaded before is reused,
	// and with a catalog layer every load goes to it (tableCache reads the
	// metadata location from the SQLite file itself).
	c.tables.forgetAll()
	if w.Catalog != nil {
		c.ice = w.Catalog(c.ice)
		c.tables.disabled = true
	}
	if w.IO != nil {
		if prev := c.wrapIO; prev != nil {
			c.wrapIO = func(fs iceio.IO) iceio.IO { return w.IO(prev(fs)) }
		} else {
			c.wrapIO = w.IO
		}
	}
}

// Properties returns the catalog's properties (warehouse, io settings).
func (c *Catalog) Properties() iceberg.Properties { return c.props }

// tableIO is the CatalogIO of every table floe loads: commits go through
// Catalog.CommitTable (so that their answers are traced), reloads through
// Catalog.Load (so that a path root and the IO wrapper stay in place).
type tableIO struct{ c *Catalog }

func (t tableIO) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	return t.c.Load(ctx, ident)
}

func (t tableIO) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, ups []table.Update) (table.Metadata, string, error) {
	return t.c.CommitTable(ctx, ident, reqs, ups)
}

// CommitTable sends one commit to the catalog and records its answer in
// the CommitTrace of ctx, if any (see TraceCommits). On the embedded and
// SQLite catalogs, a commit to a table floe holds parsed at the catalog's
// current metadata location is made by floe itself, as iceberg-go would
// make it, without parsing that metadata again (see commitCached).
func (c *Catalog) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, ups []table.Update) (table.Metadata, string, error) {
	tr, _ := ctx.Value(traceKey{}).(*CommitTrace)
	tr.begin()
	meta, loc, handled, err := c.commitCached(ctx, ident, reqs, ups)
	if !handled {
		meta, loc, err = c.ice.CommitTable(ctx, ident, reqs, ups)
	}
	tr.end(err)
	return meta, loc, err
}

// rebind returns tbl with floe's CatalogIO and the file IO fsF (wrapped).
func (c *Catalog) rebind(tbl *table.Table, fsF table.FSysF) *table.Table {
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), c.wrapFS(fsF), tableIO{c})
}

// NewTable returns a table object for metadata that is not in the catalog
// yet (a table created by its first commit, see commit.Create), bound to
// this catalog like a loaded table.
func (c *Catalog) NewTable(ident table.Identifier, meta table.Metadata, metadataLocation string) *table.Table {
	props := iceberg.Properties{}
	for k, v := range c.props {
		props[k] = v
	}
	for k, v := range meta.Properties() {
		props[k] = v
	}
	return table.New(ident, meta, metadataLocation, c.wrapFS(iceio.LoadFSFunc(props, meta.Location())), tableIO{c})
}

func (c *Catalog) wrapFS(fsF table.FSysF) table.FSysF {
	if c.wrapIO == nil {
		return fsF
	}
	wrap := c.wrapIO
	return func(ctx context.Context) (iceio.IO, error) {
		fs, err := fsF(ctx)
		if err != nil {
			return nil, err
		}
		return wrap(fs), nil
	}
}

// CommitTrace records the commit calls made to the catalog with a context
// from TraceCommits, and their answers, so that a caller can tell a commit
// that failed before reaching the catalog from one whose answer is an
// error.
type CommitTrace struct {
	mu       sync.Mutex
	started  int
	answers  []error
	inFlight int
}

type traceKey struct{}

// TraceCommits returns a context whose commit calls are recorded in the
// returned trace.
func TraceCommits(ctx context.Context) (context.Context, *CommitTrace) {
	tr := &CommitTrace{}
	return context.WithValue(ctx, traceKey{}, tr), tr
}

func (t *CommitTrace) begin() {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.started++
	t.inFlight++
	t.mu.Unlock()
}

func (t *CommitTrace) end(err error) {
	if t == nil {
		return
	}
	t.mu.Lock()
	t.inFlight--
	t.answers = append(t.answers, err)
	t.mu.Unlock()
}

// Calls returns the number of commit calls made.
func (t *CommitTrace) Calls() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.started
}

// Answers returns the answers of the calls made, in order (nil: the
// catalog accepted the commit).
func (t *CommitTrace) Answers() []error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]error(nil), t.answers...)
}

// Bind returns tbl committing through this catalog (CommitTable) and
// reloading through Load, with tbl's own file IO (not wrapped again).
func (c *Catalog) Bind(tbl *table.Table) *table.Table {
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), tbl.FS, tableIO{c})
}
