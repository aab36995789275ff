package rowfile

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
)

// tableWriter prints aligned columns for people:
//
//	 id | name  |  price
//	----+-------+--------
//	  1 | alice |  12.30
//	  2 | NULL  | 100.00
//	(2 rows)
//
// It buffers one page of rows to size the columns. Widths never shrink; when
// a later page needs wider columns the header is printed again above it, so
// every block stays aligned without holding all rows. Numbers are
// right-aligned, control characters are shown escaped (\n), and cells wider
// than the maximum cell width are cut with an ellipsis.
type tableWriter struct {
	textWriter
	cfg     writerConfig
	page    [][]string
	widths  []int
	printed bool
	total   int64
	cell    []byte
}

func (w *tableWriter) Write(rec arrow.RecordBatch) error {
	if err := w.check(rec); err != nil {
		return err
	}
	cols := rec.Columns()
	n := int(rec.NumRows())
	for i := 0; i < n; i++ {
		row := make([]string, len(cols))
		for k, c := range cols {
			if isNull(c, i) {
				row[k] = "NULL"
				continue
			}
			w.cell = w.fmts[k].text(w.cell[:0], c, i)
			row[k] = displayCell(w.cell, w.cfg.maxCellWidth)
		}
		w.page = append(w.page, row)
		w.total++
		if len(w.page) >= w.cfg.pageRows {
			if err := w.flushPage(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *tableWriter) flushPage() error {
	fields := w.schema.Fields()
	need := make([]int, len(fields))
	for k, f := range fields {
		need[k] = displayWidth(displayCell([]byte(f.Name), w.cfg.maxCellWidth))
	}
	for _, row := range w.page {
		for k, s := range row {
			need[k] = max(need[k], displayWidth(s))
		}
	}
	grow := w.widths == nil
	if !grow {
		for k := range need {
			if need[k] > w.widths[k] {
				grow = true
			}
		}
	}
	if grow {
		if w.widths == nil {
			w.widths = need
		} else {
			for k := range need {
				w.widths[k] = max(w.widths[k], need[k])
			}
			w.bw.WriteByte('\n')
		}
		w.writeHeader()
	}
	for _, row := range w.page {
		w.writeLine(row)
	}
	w.page = w.page[:0]
	w.printed = true
	return nil
}

func (w *tableWriter) writeHeader() {
	fields := w.schema.Fields()
	names := make([]string, len(fields))
	for k, f := range fields {
		names[k] = displayCell([]byte(f.Name), w.cfg.maxCellWidth)
	}
	w.writeLine(names)
	var b strings.Builder
	for k, wd := range w.widths {
		if k > 0 {
			b.WriteByte('+')
		}
		b.WriteString(strings.Repeat("-", wd+2))
	}
	b.WriteByte('\n')
	w.bw.WriteString(b.String())
}

func (w *tableWriter) writeLine(cells []string) {
	var b strings.Builder
	for k, s := range cells {
		if k > 0 {
			b.WriteString("|")
		}
		b.WriteByte(' ')
		pad := w.widths[k] - displayWidth(s)
		if w.fmts[k].numeric {
			b.WriteString(strings.Repeat(" ", pad))
			b.WriteString(s)
		} else {
			b.WriteString(s)
			b.WriteString(strings.Repeat(" ", pad))
		}
		b.WriteByte(' ')
	}
	line := strings.TrimRight(b.String(), " ")
	w.bw.WriteString(line)
	w.bw.WriteByte('\n')
}

func (w *tableWriter) Close() error {
	if w.closed {
		return ErrWriterClosed
	}
	w.closed = true
	if len(w.page) > 0 || !w.printed {
		if err := w.flushPage(); err != nil {
			return err
		}
	}
	if w.total == 1 {
		w.bw.WriteString("(1 row)\n")
	} else {
		w.bw.WriteString("(" + strconv.FormatInt(w.total, 10) + " rows)\n")
	}
	return w.bw.Flush()
}

// displayCell escapes control characters and cuts the text to at most max
// display columns, ending a cut cell with an ellipsis.
func displayCell(v []byte, max int) string {
	if len(v) <= max {
		plain := true
		for _, c := range v {
			if c < 0x20 || c >= 0x7f {
				plain = false
				break
			}
		}
		if plain {
			return string(v)
		}
	}
	b := make([]byte, 0, min(len(v), 4*max)+8)
	width, cut := 0, 0 // cut: longest prefix that fits beside an ellipsis
	for i := 0; i < len(v); {
		r, size := utf8.DecodeRune(v[i:])
		i += size
		start := len(b)
		switch {
		case r == '\n':
			b = append(b, `\n`...)
		case r == '\r':
			b = append(b, `\r`...)
		case r == '\t':
			b = append(b, `\t`...)
		case r == utf8.RuneError && size == 1:
			b = utf8.AppendRune(b, utf8.RuneError)
		case r < 0x20 || r == 0x7f:
			b = append(b, '\\', 'x', hexDigits[r>>4], hexDigits[r&0xf])
		default:
			b = utf8.AppendRune(b, r)
		}
		width += displayWidth(string(b[start:]))
		if width <= max-1 {
			cut = len(b)
		}
		if width > max {
			return string(b[:cut]) + "…"
		}
	}
	return string(b)
}

// displayWidth approximates the terminal columns of s: two for East Asian
// wide characters and common emoji, none for combining marks, one else.
func displayWidth(s string) int {
	n := 0
	for _, r := range s {
		switch {
		case r < 0x300:
			n++
		case unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Me, r) || r == 0x200B:
		case isWide(r):
			n += 2
		default:
			n++
		}
	}
	return n
}

func isWide(r rune) bool {
	switch {
	case r >= 0x1100 && r <= 0x115F,
		r >= 0x2E80 && r <= 0x303E,
		r >= 0x3041 && r <= 0x33FF,
		r >= 0x3400 && r <= 0x4DBF,
		r >= 0x4E00 && r <= 0x9FFF,
		r >= 0xA000 && r <= 0xA4CF,
		r >= 0xAC00 && r <= 0xD7A3,
		r >= 0xF900 && r <= 0xFAFF,
		r >= 0xFE30 && r <= 0xFE4F,
		r >= 0xFF00 && r <= 0xFF60,
		r >= 0xFFE0 && r <= 0xFFE6,
		r >= 0x1F300 && r <= 0x1F64F,
		r >= 0x1F900 && r <= 0x1F9FF,
		r >= 0x20000 && r <= 0x3FFFD:
		return true
	}
	return false
}
