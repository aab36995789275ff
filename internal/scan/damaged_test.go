package scan_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/tableops"
)

// damagedFixture is a table of one data file of 3000 rows (strings,
// decimals, doubles, dictionary-encoded columns) that is read directly, the
// local path of that file and its bytes.
type damagedFixture struct {
	tbl   *table.Table
	entry *scan.Entry
	path  string
	orig  []byte
}

func newDamagedFixture(tb testing.TB) *damagedFixture {
	e := tabletest.New(tb)
	tbl, err := e.Create("t", "id long not null, name string, amount decimal(10,2), x double, n int", "", nil, iceberg.Properties{"format-version": "2"})
	if err != nil {
		tb.Fatal(err)
	}
	var data [][]any
	for i := range 3000 {
		data = append(data, []any{int64(i), fmt.Sprintf("name%d", i%17), fmt.Sprintf("%d.%02d", i, i%100), float64(i) / 3, i % 1000})
	}
	if _, err := tableops.Append(e.Ctx, e.Target("t", ""), tabletest.Seq(tabletest.ArrowSchema(tbl), data)); err != nil {
		tb.Fatal(err)
	}
	tbl = e.Load("t")
	fs, err := tbl.FS(e.Ctx)
	if err != nil {
		tb.Fatal(err)
	}
	st, err := scan.LoadState(e.Ctx, fs, tbl.Metadata(), tbl.CurrentSnapshot())
	if err != nil || len(st.Data) != 1 {
		tb.Fatalf("state: %d data files, %v", len(st.Data), err)
	}
	p := strings.TrimPrefix(st.Data[0].Path(), "file://")
	orig, err := os.ReadFile(p)
	if err != nil {
		tb.Fatal(err)
	}
	return &damagedFixture{tbl: tbl, entry: st.Data[0], path: p, orig: orig}
}

// read writes b in place of the data file and reads it whole: the rows
// read, and the error that ended the read.
func (d *damagedFixture) read(tb testing.TB, b []byte) (int64, error) {
	if err := os.WriteFile(d.path, b, 0o644); err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	before := scan.DirectReads()
	r, err := scan.NewReader(ctx, d.tbl, nil)
	if err != nil {
		tb.Fatal(err)
	}
	_, seq, err := r.Live(ctx, d.entry.File, scan.Deletes{}, nil)
	if err != nil {
		return 0, err
	}
	var n int64
	for bt, err := range seq {
		if err != nil {
			return n, err
		}
		n += bt.Rec.NumRows()
		bt.Release()
	}
	if scan.DirectReads() == before {
		tb.Fatal("the file was not read directly")
	}
	return n, nil
}

// checkNamed fails unless a damaged file's error says which table and file.
func (d *damagedFixture) checkNamed(tb testing.TB, err error) {
	if err == nil {
		return
	}
	if msg := err.Error(); !strings.Contains(msg, d.entry.Path()) || !strings.Contains(msg, "table ns.t") {
		tb.Fatalf("the error does not name the table and the file: %v", err)
	}
}

// pages is where the pages of a Parquet file are: after the leading magic
// bytes, before the footer (whose length is in the last 8 bytes).
func pages(b []byte) (from, to int) {
	footer := int(binary.LittleEndian.Uint32(b[len(b)-8:]))
	return 4, len(b) - 8 - footer
}

// patch overwrites the pages of b at offset at (modulo their length) with
// p, keeping the length and the footer.
func patch(b []byte, at uint32, p []byte) []byte {
	out := append([]byte(nil), b...)
	from, to := pages(out)
	i := from + int(at%uint32(to-from))
	copy(out[i:to], p)
	return out
}

// TestDamagedDataFile damages the pages of a data file (random bytes
// overwritten, the footer left intact) and reads it directly: every read
// ends with the rows or an error naming the table and the file, and a
// decoder that panics on a damaged page gives a CorruptFileError instead of
// ending the process (pqarrow's parallel reader decoded in goroutines of
// its own, where the panic could not be recovered). The undamaged file
// reads whole before and after.
func TestDamagedDataFile(t *testing.T) {
	d := newDamagedFixture(t)
	if n, err := d.read(t, d.orig); err != nil || n != 3000 {
		t.Fatalf("the undamaged file: %d rows, %v", n, err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	from, to := pages(d.orig)
	decoder, failed := 0, 0
	for range 1000 {
		b := append([]byte(nil), d.orig...)
		for range 1 + rng.IntN(8) {
			b[from+rng.IntN(to-from)] = byte(rng.IntN(256))
		}
		_, err := d.read(t, b)
		d.checkNamed(t, err)
		if err != nil {
			failed++
		}
		var ce *scan.CorruptFileError
		if errors.As(err, &ce) && strings.Contains(ce.Problem, "decoder failed") {
			if !errors.Is(err, scan.ErrCorruptFile) || ce.Kind != "data file" {
				t.Fatalf("a decoder failure: %v", err)
			}
			decoder++
		}
	}
	if decoder == 0 || failed < 100 {
		t.Fatalf("%d of 1000 damaged files failed to read, %d in the decoder: the test no longer damages what it should", failed, decoder)
	}
	if n, err := d.read(t, d.orig); err != nil || n != 3000 {
		t.Fatalf("the undamaged file again: %d rows, %v", n, err)
	}
}

// FuzzDataFile overwrites bytes of a data file's pages (the length and the
// footer kept: damaged footers are footerIO's, which keeps them from the
// decoder) and reads it directly: the read ends, without a panic, with rows
// or an error that names the table and the file.
func FuzzDataFile(f *testing.F) {
	d := newDamagedFixture(f)
	f.Add(uint32(0), []byte{})
	f.Add(uint32(4), []byte{0x15, 0x04, 0x15, 0x80})
	f.Add(uint32(100), []byte{0xff, 0xff, 0xff, 0x7f})
	f.Add(uint32(len(d.orig)/2), []byte("\x00\x00\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, at uint32, p []byte) {
		_, err := d.read(t, patch(d.orig, at, p))
		d.checkNamed(t, err)
	})
}
