// Package pqdamage damages Parquet files the ways storage and hostile
// users do, for tests of the readers: truncation, wrong magic bytes, a
// wrong footer length, garbage footer metadata, column chunks outside the
// file or of negative length.
package pqdamage

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
)

// Footer returns the footer of a Parquet file: its metadata and the 8
// bytes of length and magic after it.
func Footer(b []byte) ([]byte, error) {
	if len(b) < 12 {
		return nil, fmt.Errorf("%d bytes is not a Parquet file", len(b))
	}
	n := int(binary.LittleEndian.Uint32(b[len(b)-8:]))
	if n+8 > len(b) {
		return nil, fmt.Errorf("footer length %d past the file", n)
	}
	return b[len(b)-8-n:], nil
}

// Truncate keeps the first half of b.
func Truncate(b []byte) ([]byte, error) { return bytes.Clone(b[:len(b)/2]), nil }

// WrongMagic replaces the magic bytes at the end of b.
func WrongMagic(b []byte) ([]byte, error) {
	out := bytes.Clone(b)
	copy(out[len(b)-4:], "PAR0")
	return out, nil
}

// FooterLength sets the footer length of b to n.
func FooterLength(b []byte, n int) []byte {
	out := bytes.Clone(b)
	binary.LittleEndian.PutUint32(out[len(b)-8:], uint32(n))
	return out
}

// FooterPastFile sets the footer length to the file's size.
func FooterPastFile(b []byte) ([]byte, error) { return FooterLength(b, len(b)), nil }

// FooterShort makes the footer length 9 bytes short.
func FooterShort(b []byte) ([]byte, error) {
	f, err := Footer(b)
	if err != nil {
		return nil, err
	}
	return FooterLength(b, len(f)-8-9), nil
}

// GarbageFooter replaces the footer metadata with pseudo-random bytes.
func GarbageFooter(b []byte) ([]byte, error) {
	f, err := Footer(b)
	if err != nil {
		return nil, err
	}
	out := bytes.Clone(b)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := len(b) - len(f); i < len(b)-8; i++ {
		out[i] = byte(rng.Uint32())
	}
	return out, nil
}

// Transplant puts footer (another file's) at the end of b, keeping b's
// size: a file whose footer describes column chunks it does not hold.
func Transplant(b, footer []byte) ([]byte, error) {
	if len(footer)+4 >= len(b) {
		return nil, fmt.Errorf("the file (%d bytes) is too small for a footer of %d", len(b), len(footer))
	}
	out := bytes.Clone(b)
	copy(out[len(b)-len(footer):], footer)
	return out, nil
}

// NegativeChunk sets the total_compressed_size of the first column chunk
// of b (FileMetaData.row_groups[0].columns[0].meta_data, field 7) to a
// negative number of the same encoded length: the footer that made
// arrow-go's decoder panic in its own goroutines.
func NegativeChunk(b []byte) ([]byte, error) {
	footer, err := Footer(b)
	if err != nil {
		return nil, err
	}
	fields, err := I64Fields(footer)
	if err != nil {
		return nil, err
	}
	start := len(b) - len(footer)
	for _, f := range fields {
		if fmt.Sprint(f.Path) != "[4 0 1 0 3 7]" {
			continue
		}
		// Zigzag: -v encodes as 2v-1, v as 2v: the same varint length but
		// for v a power of two times 64.
		neg := -f.Value
		enc := binary.AppendUvarint(nil, uint64(neg<<1)^uint64(neg>>63))
		if len(enc) != f.Len {
			return nil, fmt.Errorf("encoding %d takes %d bytes, not %d", neg, len(enc), f.Len)
		}
		out := bytes.Clone(b)
		copy(out[start+f.Off:], enc)
		return out, nil
	}
	return nil, fmt.Errorf("no total_compressed_size in the footer")
}

// I64 is an i64 field of a Thrift compact-protocol struct: where its
// varint lies and its path of field ids (a list element adds its index).
type I64 struct {
	Path     []int
	Off, Len int
	Value    int64
}

// I64Fields lists the i64 fields of the compact-protocol struct at the
// start of b (a Parquet footer), at any depth.
func I64Fields(b []byte) (out []I64, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("not a compact-protocol struct: %v", p)
		}
	}()
	pos := 0
	uvarint := func() uint64 {
		v, n := binary.Uvarint(b[pos:])
		if n <= 0 {
			panic(fmt.Sprintf("bad varint at %d", pos))
		}
		pos += n
		return v
	}
	zigzag := func(v uint64) int64 { return int64(v>>1) ^ -int64(v&1) }
	var value func(typ byte, path []int)
	var strct func(path []int)
	value = func(typ byte, path []int) {
		switch typ {
		case 1, 2, 3: // a boolean in a list (in a struct its value is in the header), a byte
			pos++
		case 4, 5:
			uvarint()
		case 6:
			start := pos
			v := uvarint()
			out = append(out, I64{Path: append([]int(nil), path...), Off: start, Len: pos - start, Value: zigzag(v)})
		case 7:
			pos += 8
		case 8:
			pos += int(uvarint())
		case 9, 10:
			h := b[pos]
			pos++
			n := int(h >> 4)
			if n == 15 {
				n = int(uvarint())
			}
			for i := range n {
				value(h&0x0f, append(path, i))
			}
		case 11:
			if n := int(uvarint()); n > 0 {
				kv := b[pos]
				pos++
				for range n {
					value(kv>>4, path)
					value(kv&0x0f, path)
				}
			}
		case 12:
			strct(path)
		default:
			panic(fmt.Sprintf("unknown compact type %d at %d", typ, pos))
		}
	}
	strct = func(path []int) {
		id := 0
		for {
			h := b[pos]
			pos++
			if h == 0 {
				return
			}
			if d := int(h >> 4); d != 0 {
				id += d
			} else {
				id = int(zigzag(uvarint()))
			}
			if typ := h & 0x0f; typ != 1 && typ != 2 {
				value(typ, append(path, id))
			}
		}
	}
	strct(nil)
	return out, nil
}
