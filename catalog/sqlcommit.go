package catalog

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"regexp"
	"strconv"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
)

// commitCached commits updates to a table of the embedded or a SQLite
// catalog whose current metadata floe already holds parsed (tableCache),
// doing what iceberg-go's SQL catalog CommitTable does without its first
// step: that step loads the table again and parses its metadata.json,
// which at thousands of snapshots costs as much as the rest of the commit
// (docs/benchmarks.md section 7). The semantics are iceberg-go's: the
// requirements are checked against the catalog's current metadata, the
// new metadata file is written with the next version number, and the
// catalog row moves to it with the same optimistic check (UPDATE ...
// WHERE metadata_location = the current one), so a commit by anyone in
// between fails this one with table.ErrCommitFailed and nothing changes.
//
// handled is false when floe cannot do it itself (not a SQL catalog, a
// catalog layer installed, no parsed table for the current location, a
// metadata codec other than none or gzip): the caller then commits through
// iceberg-go.
func (c *Catalog) commitCached(ctx context.Context, ident table.Identifier, reqs []table.Requirement, updates []table.Update) (meta table.Metadata, loc string, handled bool, err error) {
	curLoc, known := c.currentLocation(ctx, ident)
	if !known {
		return nil, "", false, nil
	}
	current, ok := c.tables.get(FormatName(ident), curLoc)
	if !ok {
		return nil, "", false, nil
	}
	version := metadataVersion(curLoc)
	if version < 0 {
		return nil, "", false, nil
	}
	for _, r := range reqs {
		if err := r.Validate(current.Metadata()); err != nil {
			return nil, "", true, err
		}
	}
	updated, err := table.UpdateTableMetadata(current.Metadata(), updates, curLoc)
	if err != nil {
		return nil, "", true, err
	}
	if updated.Equals(current.Metadata()) {
		return current.Metadata(), curLoc, true, nil
	}
	codec := updated.Properties().Get(table.MetadataCompressionKey, table.MetadataCompressionDefault)
	if codec != table.MetadataCompressionCodecNone && codec != table.MetadataCompressionCodecGzip {
		return nil, "", false, nil
	}
	provider, err := table.LoadLocationProvider(updated.Location(), updated.Properties())
	if err != nil {
		return nil, "", true, err
	}
	newLoc, err := provider.NewTableMetadataFileLocation(version + 1)
	if err != nil {
		return nil, "", true, err
	}
	ioProps := maps.Clone(c.props)
	if ioProps == nil {
		ioProps = iceberg.Properties{}
	}
	maps.Copy(ioProps, updated.Properties())
	if err := writeMetadata(ctx, updated, iceio.LoadFSFunc(ioProps, newLoc), newLoc, codec); err != nil {
		return nil, "", true, err
	}
	if testHookBeforeUpdate != nil {
		testHookBeforeUpdate()
	}
	res, err := c.db.ExecContext(ctx,
		`UPDATE iceberg_tables SET metadata_location = ?, previous_metadata_location = ?, iceberg_type = 'TABLE'
		 WHERE catalog_name = ? AND table_namespace = ? AND table_name = ? AND metadata_location = ? AND (iceberg_type = 'TABLE' OR iceberg_type IS NULL)`,
		newLoc, curLoc, c.name, ident[0], ident[1], curLoc)
	if err != nil {
		return nil, "", true, fmt.Errorf("error updating table information: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return nil, "", true, fmt.Errorf("error updating table information: %w", err)
	}
	if n == 0 {
		// NB: the words are iceberg-go's, so that write.IsConflict and
		// commit.Classify see the same conflict either way.
		return nil, "", true, fmt.Errorf("%w: table %s.%s metadata-location moved underneath us", table.ErrCommitFailed, ident[0], ident[1])
	}
	// The next load finds the new location: it gets the committed table
	// without parsing what was just written (the file IO is the one of a
	// load, which depends on the table and catalog, not the version).
	c.tables.put(FormatName(ident), table.New(ident, updated, newLoc, current.FS, tableIO{c}))
	return updated, newLoc, true, nil
}

// testHookBeforeUpdate runs between writing the new metadata file and
// moving the catalog row to it (tests: a concurrent commit).
var testHookBeforeUpdate func()

// writeMetadata writes meta to loc as iceberg-go's catalogs write it.
func writeMetadata(ctx context.Context, meta table.Metadata, fsF table.FSysF, loc, codec string) (err error) {
	fsys, err := fsF(ctx)
	if err != nil {
		return err
	}
	wfs, ok := fsys.(iceio.WriteFileIO)
	if !ok {
		return errors.New("filesystem IO does not support writing")
	}
	out, err := wfs.Create(loc)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, out.Close()) }()
	var w io.Writer = out
	if codec == table.MetadataCompressionCodecGzip {
		gz := gzip.NewWriter(out)
		defer func() { err = errors.Join(err, gz.Close()) }()
		w = gz
	}
	return json.NewEncoder(w).Encode(meta)
}

var (
	metadataFileName       = regexp.MustCompile(`^(\d+)-([\w-]{36})(?:\.\w+)?\.metadata\.json$`)
	legacyMetadataFileName = regexp.MustCompile(`^v(\d+)(?:\.gz)?\.metadata\.json$`)
)

// metadataVersion is the version number of a metadata file name
// (00003-<uuid>.metadata.json, or v3.metadata.json), -1 when it has none:
// the rule iceberg-go's catalogs number the next file by.
func metadataVersion(loc string) int {
	name := path.Base(loc)
	m := metadataFileName.FindStringSubmatch(name)
	if m == nil {
		m = legacyMetadataFileName.FindStringSubmatch(name)
	}
	if m == nil {
		return -1
	}
	if len(m) == 3 {
		if _, err := uuid.Parse(m[2]); err != nil {
			return -1
		}
	}
	v, err := strconv.Atoi(m[1])
	if err != nil {
		return -1
	}
	return v
}
