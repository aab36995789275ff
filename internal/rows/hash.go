package rows

import (
	"math"
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/zeebo/xxh3"
)

// HashKeys returns a 64-bit hash of the values of cols for every row of
// rec, reusing out when it has room. Rows whose keys are equal as
// AppendKey encodes them (NULL equal to NULL, NaN to NaN, -0 to 0) get
// equal hashes, also across records whose key columns differ only in
// integer or float width or in the kind of string or binary; unequal keys
// collide rarely, so a hash match must be confirmed with KeysEqual. The
// hash is computed column by column, without encoding each row, and is
// the same on every run (partitioning may rely on it).
func HashKeys(rec arrow.RecordBatch, cols []int, out []uint64) []uint64 {
	return HashKeysRange(rec, cols, 0, int(rec.NumRows()), out)
}

// HashKeysRange is HashKeys of rows lo to hi-1 of rec: out[k] is the hash
// of row lo+k, the same as HashKeys gives it. It lets a caller hash only
// the few rows it needs to look up.
func HashKeysRange(rec arrow.RecordBatch, cols []int, lo, hi int, out []uint64) []uint64 {
	n := hi - lo
	if cap(out) < n {
		out = make([]uint64, n)
	}
	out = out[:n]
	for i := range out {
		out[i] = hashSeed
	}
	for _, c := range cols {
		hashColumn(out, rec.Column(c), lo)
	}
	for i, h := range out {
		out[i] = fmix64(h)
	}
	return out
}

// HashInt returns what HashKeys gives a row whose only key column is an
// integer (of any width, or a date, time or timestamp) holding v.
func HashInt(v int64) uint64 { return fmix64(mixValue(hashSeed, uint64(v))) }

// hashColumn folds the values of arr from row off on into the running
// hashes out.
func hashColumn(out []uint64, arr arrow.Array, off int) {
	switch a := arr.(type) {
	case *array.Int64:
		hashInts(out, a, a.Int64Values(), off)
	case *array.Int32:
		hashInts(out, a, a.Int32Values(), off)
	case *array.Int16:
		hashInts(out, a, a.Int16Values(), off)
	case *array.Int8:
		hashInts(out, a, a.Int8Values(), off)
	case *array.Uint64:
		hashInts(out, a, a.Uint64Values(), off)
	case *array.Uint32:
		hashInts(out, a, a.Uint32Values(), off)
	case *array.Uint16:
		hashInts(out, a, a.Uint16Values(), off)
	case *array.Uint8:
		hashInts(out, a, a.Uint8Values(), off)
	case *array.Date32:
		hashInts(out, a, a.Date32Values(), off)
	case *array.Date64:
		hashInts(out, a, a.Date64Values(), off)
	case *array.Time32:
		hashInts(out, a, a.Time32Values(), off)
	case *array.Time64:
		hashInts(out, a, a.Time64Values(), off)
	case *array.Timestamp:
		hashInts(out, a, a.TimestampValues(), off)
	case *array.Float64:
		for i := range out {
			if a.IsNull(off + i) {
				out[i] = mixNull(out[i])
			} else {
				out[i] = mixValue(out[i], floatBits(a.Value(off+i)))
			}
		}
	case *array.Float32:
		for i := range out {
			if a.IsNull(off + i) {
				out[i] = mixNull(out[i])
			} else {
				out[i] = mixValue(out[i], floatBits(float64(a.Value(off+i))))
			}
		}
	case *array.String:
		for i := range out {
			if a.IsNull(off + i) {
				out[i] = mixNull(out[i])
			} else {
				out[i] = mixValue(out[i], xxh3.HashString(a.Value(off+i)))
			}
		}
	case *array.LargeString:
		for i := range out {
			if a.IsNull(off + i) {
				out[i] = mixNull(out[i])
			} else {
				out[i] = mixValue(out[i], xxh3.HashString(a.Value(off+i)))
			}
		}
	case *array.Binary:
		hashBytes(out, a, a.Value, off)
	case *array.LargeBinary:
		hashBytes(out, a, a.Value, off)
	case *array.FixedSizeBinary:
		hashBytes(out, a, a.Value, off)
	case array.ExtensionArray:
		hashColumn(out, a.Storage(), off)
	case *array.Decimal128:
		for i := range out {
			if a.IsNull(off + i) {
				out[i] = mixNull(out[i])
			} else {
				v := a.Value(off + i)
				out[i] = mixValue(mixValue(out[i], uint64(v.HighBits())), v.LowBits())
			}
		}
	case *array.Boolean:
		for i := range out {
			switch {
			case a.IsNull(off + i):
				out[i] = mixNull(out[i])
			case a.Value(off + i):
				out[i] = mixValue(out[i], 1)
			default:
				out[i] = mixValue(out[i], 0)
			}
		}
	default:
		// Nested types hash their canonical encoding.
		var buf []byte
		for i := range out {
			buf = AppendValue(buf[:0], arr, off+i)
			out[i] = mixValue(out[i], xxh3.Hash(buf))
		}
	}
}

func hashBytes(out []uint64, a arrow.Array, value func(int) []byte, off int) {
	for i := range out {
		if a.IsNull(off + i) {
			out[i] = mixNull(out[i])
		} else {
			out[i] = mixValue(out[i], xxh3.Hash(value(off+i)))
		}
	}
}

type integer interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

func hashInts[T integer](out []uint64, a arrow.Array, vals []T, off int) {
	vals = vals[off : off+len(out)]
	if a.NullN() == 0 {
		for i, v := range vals {
			out[i] = mixValue(out[i], uint64(v))
		}
		return
	}
	for i, v := range vals {
		if a.IsNull(off + i) {
			out[i] = mixNull(out[i])
		} else {
			out[i] = mixValue(out[i], uint64(v))
		}
	}
}

const (
	hashSeed  = 0x243f6a8885a308d3
	nullValue = 0x9e3779b97f4a7c15
)

// mixValue folds one column's value into a row's running hash; the
// rotation makes the column order count.
func mixValue(h, v uint64) uint64 { return bits.RotateLeft64(h, 23) ^ fmix64(v^0x5bd1e9955bd1e995) }

func mixNull(h uint64) uint64 { return bits.RotateLeft64(h, 23) ^ nullValue }

// fmix64 is MurmurHash3's 64-bit finaliser.
func fmix64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// floatBits is the bit pattern AppendKey encodes a float by: one NaN, and
// -0 folded into 0.
func floatBits(f float64) uint64 {
	switch {
	case math.IsNaN(f):
		f = math.NaN()
	case f == 0:
		f = 0
	}
	return math.Float64bits(f)
}

// KeysEqual reports whether row i of a and row j of b hold equal values
// in cols, with the equality AppendKey encodes (NULL equal to NULL, NaN to
// NaN, -0 to 0). Columns of the same type compare directly; others
// compare their encodings.
func KeysEqual(a arrow.RecordBatch, i int, b arrow.RecordBatch, j int, cols []int) bool {
	for _, c := range cols {
		if !valueEqual(a.Column(c), i, b.Column(c), j) {
			return false
		}
	}
	return true
}

func valueEqual(x arrow.Array, i int, y arrow.Array, j int) bool {
	xn, yn := x.IsNull(i), y.IsNull(j)
	if xn || yn {
		return xn == yn
	}
	switch xa := x.(type) {
	case *array.Int64:
		if ya, ok := y.(*array.Int64); ok {
			return xa.Value(i) == ya.Value(j)
		}
	case *array.Int32:
		if ya, ok := y.(*array.Int32); ok {
			return xa.Value(i) == ya.Value(j)
		}
	case *array.Timestamp:
		if ya, ok := y.(*array.Timestamp); ok {
			return xa.Value(i) == ya.Value(j)
		}
	case *array.Date32:
		if ya, ok := y.(*array.Date32); ok {
			return xa.Value(i) == ya.Value(j)
		}
	case *array.Float64:
		if ya, ok := y.(*array.Float64); ok {
			return floatBits(xa.Value(i)) == floatBits(ya.Value(j))
		}
	case *array.String:
		if ya, ok := y.(*array.String); ok {
			return xa.Value(i) == ya.Value(j)
		}
	case *array.Decimal128:
		if ya, ok := y.(*array.Decimal128); ok {
			return xa.Value(i) == ya.Value(j)
		}
	case *array.Boolean:
		if ya, ok := y.(*array.Boolean); ok {
			return xa.Value(i) == ya.Value(j)
		}
	}
	var bx, by [64]byte
	ex := AppendValue(bx[:0], x, i)
	ey := AppendValue(by[:0], y, j)
	return string(ex) == string(ey)
}
