package catalog

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// StageCreate returns a table object for a new table ident that is not in
// the catalog yet: files can be written for it, and its first commit
// creates it (with the commit's snapshot and properties, in one catalog
// commit). Only catalogs whose commits can create a table support it (the
// embedded and SQL catalogs, where iceberg-go's CommitTable creates a
// missing table); others return an error wrapping ErrUnsupported. A table
// that exists is an error wrapping ErrTableExists.
func (c *Catalog) StageCreate(ctx context.Context, ident table.Identifier, sc *iceberg.Schema, spec iceberg.PartitionSpec, props iceberg.Properties) (*table.Table, error) {
	name := FormatName(ident)
	if c.kind != "embedded" && c.kind != "sql" {
		return nil, fmt.Errorf("%w: creating %s in its first commit (catalog %q is %s)", ErrUnsupported, name, c.name, c.kind)
	}
	ns := ident[:len(ident)-1]
	if ok, err := c.ice.CheckNamespaceExists(ctx, ns); err != nil {
		return nil, err
	} else if !ok {
		return nil, fmt.Errorf("%w: namespace %s (creating %s)", ErrNoSuchNamespace, FormatName(ns), name)
	}
	if ok, err := c.ice.CheckTableExists(ctx, ident); err != nil {
		return nil, err
	} else if ok {
		return nil, fmt.Errorf("create %s: %w", name, ErrTableExists)
	}
	loc, err := c.defaultLocation(ctx, ident)
	if err != nil {
		return nil, err
	}
	want, err := table.NewMetadata(sc, &spec, table.UnsortedSortOrder, loc, props)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", name, err)
	}
	// The catalog builds the table by applying the updates to empty
	// metadata (catalog/internal's UpdateAndStageTable), which numbers the
	// schema and spec after the empty ones: build the same metadata here,
	// so that the files written for the first commit carry those ids.
	empty, err := table.NewMetadata(iceberg.NewSchema(0), nil, table.UnsortedSortOrder, "", nil)
	if err != nil {
		return nil, err
	}
	meta, err := table.UpdateTableMetadata(empty, createUpdates(want), "")
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", name, err)
	}
	ioProps := iceberg.Properties{}
	for k, v := range c.props {
		ioProps[k] = v
	}
	for k, v := range meta.Properties() {
		ioProps[k] = v
	}
	return table.New(ident, meta, "", c.wrapFS(iceio.LoadFSFunc(ioProps, loc)), createIO{c: c, meta: want}), nil
}

// defaultLocation is where the SQL catalog puts a new table: the
// namespace's location property, else <warehouse>/<ns>.db/<table>.
func (c *Catalog) defaultLocation(ctx context.Context, ident table.Identifier) (string, error) {
	ns, tbl := ident[:len(ident)-1], ident[len(ident)-1]
	nsProps, err := c.ice.LoadNamespaceProperties(ctx, ns)
	if err != nil {
		return "", err
	}
	if loc := nsProps.Get("location", ""); loc != "" {
		return url.JoinPath(loc, tbl)
	}
	wh := c.props.Get("warehouse", "")
	if wh == "" {
		return "", fmt.Errorf("%w: catalog %q has no warehouse to put %s in", ErrUnsupported, c.name, FormatName(ident))
	}
	return url.JoinPath(wh, strings.Join(ns, ".")+".db", tbl)
}

// createIO is the CatalogIO of a staged new table: its commit creates the
// table, asserting that it does not exist, with the updates that build
// its metadata from nothing followed by the commit's own.
type createIO struct {
	c    *Catalog
	meta table.Metadata
}

func (t createIO) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	return t.c.Load(ctx, ident)
}

func (t createIO) CommitTable(ctx context.Context, ident table.Identifier, _ []table.Requirement, ups []table.Update) (table.Metadata, string, error) {
	return t.c.CommitTable(ctx, ident, []table.Requirement{table.AssertCreate()}, append(createUpdates(t.meta), ups...))
}

// createUpdates are the updates that build meta from empty metadata, as
// Iceberg's REST protocol sends them for a staged create.
func createUpdates(meta table.Metadata) []table.Update {
	ups := []table.Update{
		table.NewAssignUUIDUpdate(meta.TableUUID()),
		table.NewUpgradeFormatVersionUpdate(meta.Version()),
		table.NewAddSchemaUpdate(meta.CurrentSchema()),
		table.NewSetCurrentSchemaUpdate(-1),
	}
	spec := meta.PartitionSpec()
	ups = append(ups, table.NewAddPartitionSpecUpdate(&spec, true), table.NewSetDefaultSpecUpdate(-1))
	order := meta.SortOrder()
	ups = append(ups, table.NewAddSortOrderUpdate(&order), table.NewSetDefaultSortOrderUpdate(-1),
		table.NewSetLocationUpdate(meta.Location()))
	if p := meta.Properties(); len(p) > 0 {
		ups = append(ups, table.NewSetPropertiesUpdate(p))
	}
	return ups
}
