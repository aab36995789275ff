package delta

import (
	"encoding/binary"
	"fmt"
)

// z85Alphabet is the Z85 alphabet (ZeroMQ RFC 32), which Delta uses for
// inline deletion vectors and for the UUIDs of deletion vector file names.
const z85Alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"

var z85Decode = func() (t [256]int16) {
	for i := range t {
		t[i] = -1
	}
	for i := 0; i < len(z85Alphabet); i++ {
		t[z85Alphabet[i]] = int16(i)
	}
	return t
}()

// DecodeZ85 decodes s into exactly n bytes. Two encodings of a length that is
// not a multiple of four exist in Delta logs and both are accepted:
//
//   - Delta-Java (Base85Codec) pads the input with zero bytes to a multiple
//     of four, encodes whole 5-character blocks and the reader keeps the first
//     n bytes;
//   - the Rust z85 crate (used by delta-rs and kernel-rs writers) encodes the
//     k-byte tail as the big-endian number of those k bytes in a 5-character
//     block whose first 4-k characters are replaced by '#'.
//
// The forms are told apart by the last block: a block starting with '#'
// would exceed 2^32-1 in standard Z85 ('#' is digit 84 and 84·85^4 > 2^32),
// so it can only be the Rust tail.
//
// It fails when s has characters outside the alphabet, a length that is not
// a multiple of 5 or that cannot hold exactly n bytes, or a block that
// overflows.
func DecodeZ85(s string, n int) ([]byte, error) {
	if n < 0 {
		return nil, fmt.Errorf("negative length %d", n)
	}
	if len(s)%5 != 0 {
		return nil, fmt.Errorf("z85 text of %d characters is not a multiple of 5", len(s))
	}
	blocks := len(s) / 5
	if (n+3)/4 != blocks {
		return nil, fmt.Errorf("z85 text of %d characters cannot hold %d bytes", len(s), n)
	}
	out := make([]byte, blocks*4)
	for b := 0; b < blocks; b++ {
		blk := s[b*5 : b*5+5]
		if b == blocks-1 && blk[0] == '#' {
			// Rust z85 tail: leading '#' stand for missing bytes.
			missing := 0
			for missing < 5 && blk[missing] == '#' {
				missing++
			}
			if missing > 3 || 4-missing != n-b*4 {
				return nil, fmt.Errorf("z85 tail block %q does not encode %d bytes", blk, n-b*4)
			}
			var v uint64
			for i := 0; i < 5; i++ {
				d := int16(0)
				if i >= missing {
					d = z85Decode[blk[i]]
					if d < 0 {
						return nil, fmt.Errorf("invalid z85 character %q at %d", blk[i], b*5+i)
					}
				}
				v = v*85 + uint64(d)
			}
			k := 4 - missing
			if v >= 1<<(8*k) {
				return nil, fmt.Errorf("z85 tail block %q overflows %d bytes", blk, k)
			}
			var tmp [4]byte
			binary.BigEndian.PutUint32(tmp[:], uint32(v))
			copy(out[b*4:], tmp[4-k:])
			return out[:n], nil
		}
		var v uint64
		for i := 0; i < 5; i++ {
			d := z85Decode[blk[i]]
			if d < 0 {
				return nil, fmt.Errorf("invalid z85 character %q at %d", blk[i], b*5+i)
			}
			v = v*85 + uint64(d)
		}
		if v > 0xFFFFFFFF {
			return nil, fmt.Errorf("z85 block %q at %d overflows 32 bits", blk, b*5)
		}
		binary.BigEndian.PutUint32(out[b*4:], uint32(v))
	}
	return out[:n], nil
}

// EncodeZ85 encodes data the Delta-Java way: zero-padded to a multiple of
// four bytes, so DecodeZ85(EncodeZ85(b), len(b)) == b.
func EncodeZ85(data []byte) string {
	padded := make([]byte, (len(data)+3)/4*4)
	copy(padded, data)
	out := make([]byte, 0, len(padded)/4*5)
	for i := 0; i < len(padded); i += 4 {
		v := binary.BigEndian.Uint32(padded[i:])
		var blk [5]byte
		for j := 4; j >= 0; j-- {
			blk[j] = z85Alphabet[v%85]
			v /= 85
		}
		out = append(out, blk[:]...)
	}
	return string(out)
}
