// Package pqcheck checks the footer of a Parquet file before arrow-go's
// decoder trusts it. A damaged footer (a negative or oversized column chunk
// length) made the decoder panic inside goroutines of its own, where no
// caller can recover: FuzzCheckpoint found it. Files that pass still go
// through the decoder's own checks; callers also recover from panics in
// their own goroutine.
package pqcheck

import (
	"fmt"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// Check returns an error when a row group or column chunk of pf has a
// negative count or a byte range outside the file.
func Check(pf *file.Reader) error { return CheckMetadata(pf.MetaData()) }

// CheckMetadata is Check on parsed file metadata; its source file size
// must be set (metadata.FileMetaData.SetSourceFileSize).
func CheckMetadata(md *metadata.FileMetaData) error {
	if md == nil {
		return fmt.Errorf("no file metadata")
	}
	size := md.GetSourceFileSize()
	for rg := 0; rg < md.NumRowGroups(); rg++ {
		rgm := md.RowGroup(rg)
		if rgm.NumRows() < 0 {
			return fmt.Errorf("row group %d has %d rows", rg, rgm.NumRows())
		}
		for c := 0; c < rgm.NumColumns(); c++ {
			col, err := rgm.ColumnChunk(c)
			if err != nil {
				return fmt.Errorf("row group %d, column %d: %w", rg, c, err)
			}
			start := col.DataPageOffset()
			if col.HasDictionaryPage() && col.DictionaryPageOffset() > 0 && start > col.DictionaryPageOffset() {
				start = col.DictionaryPageOffset()
			}
			n := col.TotalCompressedSize()
			if start < 0 || n < 0 || start > size || n > size-start {
				return fmt.Errorf("row group %d, column %d: %d bytes at offset %d lie outside the file of %d bytes", rg, c, n, start, size)
			}
			if col.NumValues() < 0 {
				return fmt.Errorf("row group %d, column %d has %d values", rg, c, col.NumValues())
			}
		}
	}
	return nil
}
