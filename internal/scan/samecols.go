package scan

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
)

// SameColumns lists the top-level columns of the schema (by name, in
// schema order) whose values are the same, row for row, in data files a
// and b because both store them in byte-identical column chunks: the
// files are Parquet with the same row groups (same row counts), and in
// every row group the column is the same leaf (field ID, physical and
// logical type, levels) stored in the same bytes (dictionary and data
// pages, headers included). Decoding identical bytes against the same
// leaf gives identical values, so a reader may take such a column of one
// file for the other's. A copy-on-write rewrite that keeps the row order
// leaves the columns it did not change so, while no row before them was
// deleted.
//
// It reads both footers and, for the columns whose chunk sizes agree, the
// chunk bytes of both files. Files that cannot be compared so (another
// format, other row groups, columns without field IDs) have no same
// columns; errors are those of reading the files.
func (r *Reader) SameColumns(ctx context.Context, a, b iceberg.DataFile) ([]string, error) {
	if a.FileFormat() != iceberg.ParquetFile || b.FileFormat() != iceberg.ParquetFile || a.Count() != b.Count() {
		return nil, nil
	}
	fa, ma, err := r.footer(a)
	if err != nil {
		return nil, err
	}
	defer fa.Close()
	fb, mb, err := r.footer(b)
	if err != nil {
		return nil, err
	}
	defer fb.Close()
	if ma.NumRowGroups() != mb.NumRowGroups() {
		return nil, nil
	}
	for k := range ma.NumRowGroups() {
		if ma.RowGroup(k).NumRows() != mb.RowGroup(k).NumRows() {
			return nil, nil
		}
	}
	la, lb := topLeaves(ma), topLeaves(mb)
	var same []string
	bufA, bufB := make([]byte, 1<<20), make([]byte, 1<<20)
	for _, f := range r.schema.Fields() {
		ia, okA := la[f.ID]
		ib, okB := lb[f.ID]
		if !okA || !okB || ia < 0 || ib < 0 || !sameLeaf(ma, mb, ia, ib) {
			continue
		}
		eq := true
		for k := 0; eq && k < ma.NumRowGroups(); k++ {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			ca, err := ma.RowGroup(k).ColumnChunk(ia)
			if err != nil {
				return nil, nil
			}
			cb, err := mb.RowGroup(k).ColumnChunk(ib)
			if err != nil {
				return nil, nil
			}
			offA, offB := chunkStart(ca), chunkStart(cb)
			n := ca.TotalCompressedSize()
			if n != cb.TotalCompressedSize() || ca.NumValues() != cb.NumValues() || n <= 0 || offA < 0 || offB < 0 {
				eq = false
				break
			}
			if eq, err = sameBytes(fa, fb, offA, offB, n, bufA, bufB); err != nil {
				return nil, fmt.Errorf("table %s: comparing data files %s and %s: %w", r.checked.table, a.FilePath(), b.FilePath(), err)
			}
		}
		if eq {
			same = append(same, f.Name)
		}
	}
	return same, nil
}

// footer opens df and reads its Parquet footer.
func (r *Reader) footer(df iceberg.DataFile) (iceio.File, *metadata.FileMetaData, error) {
	r.checked.expect(df)
	f, err := r.checked.Open(df.FilePath())
	if err != nil {
		return nil, nil, err
	}
	pr, err := file.NewParquetReader(f)
	if err != nil {
		f.Close()
		return nil, nil, r.readError(df, err)
	}
	return f, pr.MetaData(), nil
}

// topLeaves maps the field ID of each top-level primitive column of a
// file to its leaf index; -1 for an ID seen twice.
func topLeaves(m *metadata.FileMetaData) map[int]int {
	out := map[int]int{}
	for i := range m.Schema.NumColumns() {
		c := m.Schema.Column(i)
		if len(c.ColumnPath()) != 1 {
			continue
		}
		id := int(c.SchemaNode().FieldID())
		if id < 0 {
			continue
		}
		if _, dup := out[id]; dup {
			out[id] = -1
			continue
		}
		out[id] = i
	}
	return out
}

// sameLeaf reports whether leaf ia of ma and ib of mb are stored alike.
func sameLeaf(ma, mb *metadata.FileMetaData, ia, ib int) bool {
	ca, cb := ma.Schema.Column(ia), mb.Schema.Column(ib)
	return ca.PhysicalType() == cb.PhysicalType() && ca.TypeLength() == cb.TypeLength() &&
		ca.ConvertedType() == cb.ConvertedType() && ca.LogicalType().Equals(cb.LogicalType()) &&
		ca.MaxDefinitionLevel() == cb.MaxDefinitionLevel() && ca.MaxRepetitionLevel() == cb.MaxRepetitionLevel()
}

// chunkStart is the offset of a column chunk's first page (its
// dictionary page, if any).
func chunkStart(c *metadata.ColumnChunkMetaData) int64 {
	off := c.DataPageOffset()
	if c.HasDictionaryPage() && c.DictionaryPageOffset() > 0 && c.DictionaryPageOffset() < off {
		off = c.DictionaryPageOffset()
	}
	return off
}

// sameBytes compares n bytes of a at offA with n bytes of b at offB.
func sameBytes(a, b io.ReaderAt, offA, offB, n int64, bufA, bufB []byte) (bool, error) {
	for n > 0 {
		m := min(n, int64(len(bufA)))
		if k, err := a.ReadAt(bufA[:m], offA); int64(k) < m {
			return false, readErr(err)
		}
		if k, err := b.ReadAt(bufB[:m], offB); int64(k) < m {
			return false, readErr(err)
		}
		if !bytes.Equal(bufA[:m], bufB[:m]) {
			return false, nil
		}
		offA, offB, n = offA+m, offB+m, n-m
	}
	return true, nil
}

// readErr is the error of a short read: err, or io.ErrUnexpectedEOF.
func readErr(err error) error {
	if err == nil || err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
