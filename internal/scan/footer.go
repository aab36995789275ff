package scan

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table/dv"

	"github.com/floedata/floe/internal/pqcheck"
	"github.com/floedata/floe/internal/safe"
)

// ErrCorruptFile is wrapped by errors about a data or delete file of a
// table that is not the Parquet file the table's metadata describes: no
// Parquet magic bytes at its end (a truncated file, most often), a footer
// length that does not fit, footer metadata that does not parse, or row
// groups and column chunks outside the file. Nothing is read from such a
// file.
var ErrCorruptFile = errors.New("corrupt file")

// CorruptFileError describes a damaged file (see ErrCorruptFile).
type CorruptFileError struct {
	Table   string // the table, ns.name
	Kind    string // "data file", "position delete file", "equality delete file"
	Path    string
	Problem string
}

func (e *CorruptFileError) Error() string {
	return fmt.Sprintf("corrupt %s: table %s: %s: %s", e.Kind, e.Table, e.Path, e.Problem)
}

func (e *CorruptFileError) Unwrap() error { return ErrCorruptFile }

// A footerIO checks the Parquet footer of the files registered with it
// before arrow-go's decoder trusts it: a damaged footer (a column chunk
// with a negative length, or outside the file) made the decoder panic in
// goroutines of iceberg-go's scan and of its own, where floe cannot
// recover, and the process crashed with a trace. The check costs no extra
// request on object storage: the file wraps the reads arrow-go makes
// anyway (the size from Seek, the 8 bytes at the end, then the footer) and
// checks the bytes those reads return, once, before handing them over; a
// reader that reads in another order gets the check made with its own
// reads first. Other files pass through untouched. Only Open and Remove
// are offered: every optional interface iceberg-go looks for has a
// fallback, and scans only open files.
type footerIO struct {
	iceio.IO
	table string
	files sync.Map // path -> footerFile
}

// footerFile is what a registered file should be.
type footerFile struct {
	kind string
	size int64 // as the manifest records it; <= 0: unknown
}

// expect registers df: opening it checks its footer.
func (f *footerIO) expect(df iceberg.DataFile) {
	if df.FileFormat() != iceberg.ParquetFile {
		return
	}
	kind := "data file"
	switch df.ContentType() {
	case iceberg.EntryContentPosDeletes:
		kind = "position delete file"
	case iceberg.EntryContentEqDeletes:
		kind = "equality delete file"
	}
	f.files.LoadOrStore(df.FilePath(), footerFile{kind: kind, size: df.FileSizeBytes()})
}

func (f *footerIO) Open(name string) (iceio.File, error) {
	file, err := f.IO.Open(name)
	if err != nil {
		return nil, err
	}
	v, ok := f.files.Load(name)
	if !ok {
		return file, nil
	}
	want := v.(footerFile)
	return &checkedFile{File: file, problem: func(p string) error {
		return &CorruptFileError{Table: f.table, Kind: want.kind, Path: name, Problem: p}
	}, want: want.size, size: -1}, nil
}

// checkedFile is a file whose footer is checked before arrow-go reads
// past it.
type checkedFile struct {
	iceio.File
	problem func(string) error
	want    int64

	mu      sync.Mutex
	size    int64 // -1 until known
	metaLen int64 // -1 until the tail was read
	done    bool
	err     error // the footer's problem, once found
}

func (c *checkedFile) Seek(offset int64, whence int) (int64, error) {
	n, err := c.File.Seek(offset, whence)
	if err != nil || whence != io.SeekEnd || offset != 0 {
		return n, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil && c.size < 0 {
		c.setSize(n)
	}
	if c.err != nil {
		return 0, c.err
	}
	return n, nil
}

// setSize records the file's size. c.mu is held.
func (c *checkedFile) setSize(n int64) {
	c.size, c.metaLen = n, -1
	if n < 12 {
		c.fail("%d bytes is too short for a Parquet file", n)
	}
}

// fail records the file's problem. When the file's size differs from the
// one the table's metadata records, the problem says so too. (A size that
// differs is not an error by itself: some writers record sizes that are
// wrong, and the file is read by its own size, as arrow-go and PyIceberg
// read it.) c.mu is held.
func (c *checkedFile) fail(format string, args ...any) {
	p := fmt.Sprintf(format, args...)
	if c.want > 0 && c.size >= 0 && c.size != c.want {
		p = fmt.Sprintf("the file is %d bytes long and the table's metadata records %d (truncated or replaced?), and %s", c.size, c.want, p)
	}
	c.err = c.problem(p)
}

func (c *checkedFile) ReadAt(p []byte, off int64) (int, error) {
	c.mu.Lock()
	if c.done {
		c.mu.Unlock()
		return c.File.ReadAt(p, off)
	}
	defer c.mu.Unlock()
	if c.err == nil && c.size < 0 {
		st, err := c.File.Stat()
		if err != nil {
			return 0, err
		}
		c.setSize(st.Size())
	}
	if c.err != nil {
		return 0, c.err
	}
	switch {
	case off == c.size-8 && len(p) == 8 && c.metaLen < 0:
		// arrow-go's first read: footer length and magic.
		n, err := c.File.ReadAt(p, off)
		if n == 8 {
			c.tail(p)
		}
		if c.err != nil {
			return 0, c.err
		}
		return n, err
	case c.metaLen >= 0 && off == c.size-8-c.metaLen && int64(len(p)) == c.metaLen:
		// Its second: the footer itself.
		n, err := c.File.ReadAt(p, off)
		if err != nil && !(errors.Is(err, io.EOF) && n == len(p)) {
			return n, err
		}
		c.footer(p)
		if c.err != nil {
			return 0, c.err
		}
		return n, err
	}
	// Another reader, or another order: check with reads of our own first.
	if err := c.checkNow(); err != nil {
		return 0, err
	}
	return c.File.ReadAt(p, off)
}

// checkNow reads and checks the tail and footer. c.mu is held.
func (c *checkedFile) checkNow() error {
	if c.metaLen < 0 {
		var t [8]byte
		if _, err := c.File.ReadAt(t[:], c.size-8); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if c.tail(t[:]); c.err != nil {
			return c.err
		}
	}
	if !c.done {
		buf := make([]byte, c.metaLen)
		if n, err := c.File.ReadAt(buf, c.size-8-c.metaLen); err != nil && !(errors.Is(err, io.EOF) && n == len(buf)) {
			return err
		}
		if c.footer(buf); c.err != nil {
			return c.err
		}
	}
	return nil
}

// tail checks the last 8 bytes: the footer length and the magic bytes.
// c.mu is held.
func (c *checkedFile) tail(t []byte) {
	n := int64(binary.LittleEndian.Uint32(t[:4]))
	switch string(t[4:]) {
	case "PAR1":
	case "PARE":
		// An encrypted footer: not checked here; the reader refuses it
		// without keys.
		c.done = true
		return
	default:
		c.fail("it does not end with the Parquet magic bytes PAR1 (its last 4 bytes are %q): the file is truncated, overwritten or not Parquet", t[4:])
		return
	}
	if n == 0 || n > c.size-12 {
		c.fail("its footer length %d does not fit in the file of %d bytes", n, c.size)
		return
	}
	c.metaLen = n
}

// footer parses and checks the footer metadata as arrow-go will, with
// panics turned into the file's problem. c.mu is held.
func (c *checkedFile) footer(buf []byte) {
	defer func() {
		if p := recover(); p != nil {
			c.fail("its footer metadata is damaged (%v)", p)
		}
	}()
	md, err := metadata.NewFileMetaData(buf, nil)
	if err != nil {
		c.fail("its footer metadata does not parse: %v", err)
		return
	}
	md.SetSourceFileSize(c.size)
	if err := pqcheck.CheckMetadata(md); err != nil {
		c.fail("its footer is damaged: %v", err)
		return
	}
	if _, err := pqarrow.FromParquet(md.Schema, &pqarrow.ArrowReadProperties{}, md.KeyValueMetadata()); err != nil {
		c.fail("its footer's schema does not convert to Arrow: %v", err)
		return
	}
	c.done = true
}

// corruptFile returns the *CorruptFileError in err's chain, or nil.
func corruptFile(err error) *CorruptFileError {
	var ce *CorruptFileError
	if errors.As(err, &ce) {
		return ce
	}
	return nil
}

// readError describes an error reading file df: a damaged file's own
// description (not wrapped in the decoder's "could not read footer"), or
// the error with the table and file.
func (r *Reader) readError(df iceberg.DataFile, err error) error {
	if ce := corruptFile(err); ce != nil {
		return ce
	}
	return fmt.Errorf("table %s: read %s: %w", r.checked.table, df.FilePath(), err)
}

// readDV reads a deletion vector, with a decoder panic (in the caller's
// goroutine) turned into an error.
func readDV(fs iceio.IO, f iceberg.DataFile) (_ *dv.RoaringPositionBitmap, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the decoder failed: %v", p)
		}
	}()
	return dv.ReadDV(fs, f)
}

// RecoverRead, deferred in a goroutine that reads df (a file of r's
// table), turns a panic into *errp: a panic in a goroutine of floe's own
// would otherwise end the process with a trace. (Panics in iceberg-go's and
// arrow-go's own goroutines cannot be caught; footerIO keeps damaged
// footers from them, and direct reads decode pages in goroutines of floe's
// own that recover. A damaged page of a file iceberg-go reads, one that
// direct does not take, can still end the process.)
func (r *Reader) RecoverRead(errp *error, df iceberg.DataFile) {
	if p := recover(); p != nil {
		*errp = fmt.Errorf("table %s: read %s (a damaged file?): %w", r.checked.table, df.FilePath(), safe.Recovered(p))
	}
}
