package changelog

import "github.com/RoaringBitmap/roaring/v2"

// idSet is a set of row ids (int64, >= 0) that counts the ids of a range
// in time that follows the range: the lineage changelog asks it once per
// run of a file's ids. roaring64's Rank sums the cardinality of every
// container below its argument, so counting a range cost time linear in
// the whole set (10% of a 10M-row v3 changelog). The set is roaring's
// 32-bit bitmaps keyed by the ids' high 32 bits; CardinalityInRange reads
// only the containers a range spans.
type idSet struct {
	parts map[uint32]*roaring.Bitmap
}

func newIDSet() *idSet { return &idSet{parts: map[uint32]*roaring.Bitmap{}} }

// split calls f with the pieces of a..b (inclusive, 0 <= a <= b) that lie
// within one high part: the part's key and the low bits of both ends.
func split(a, b int64, f func(hi, lo, last uint32)) {
	for {
		hi := uint32(uint64(a) >> 32)
		end := min(b, int64(uint64(hi)<<32|0xffffffff))
		f(hi, uint32(a), uint32(end))
		if end == b {
			return
		}
		a = end + 1
	}
}

// addRange adds the ids a..b (inclusive, 0 <= a <= b).
func (s *idSet) addRange(a, b int64) {
	split(a, b, func(hi, lo, last uint32) {
		p := s.parts[hi]
		if p == nil {
			p = roaring.New()
			s.parts[hi] = p
		}
		p.AddRange(uint64(lo), uint64(last)+1)
	})
}

// countIn is how many of the ids a..b (inclusive, 0 <= a <= b) s holds.
func (s *idSet) countIn(a, b int64) uint64 {
	var n uint64
	if uint64(b)>>32-uint64(a)>>32 > uint64(len(s.parts)) {
		// A range over more parts than s has: visit those it has.
		for hi, p := range s.parts {
			from, to := max(a, int64(uint64(hi)<<32)), min(b, int64(uint64(hi)<<32|0xffffffff))
			if from <= to {
				n += p.CardinalityInRange(uint64(uint32(from)), uint64(uint32(to))+1)
			}
		}
		return n
	}
	split(a, b, func(hi, lo, last uint32) {
		if p := s.parts[hi]; p != nil {
			n += p.CardinalityInRange(uint64(lo), uint64(last)+1)
		}
	})
	return n
}

// contains reports whether s holds id (>= 0).
func (s *idSet) contains(id int64) bool {
	p := s.parts[uint32(uint64(id)>>32)]
	return p != nil && p.Contains(uint32(id))
}

// checkedAdd adds id (>= 0) and reports whether it was not in s before.
func (s *idSet) checkedAdd(id int64) bool {
	hi := uint32(uint64(id) >> 32)
	p := s.parts[hi]
	if p == nil {
		p = roaring.New()
		s.parts[hi] = p
	}
	return p.CheckedAdd(uint32(id))
}

// andCardinality is how many ids s and o both hold.
func (s *idSet) andCardinality(o *idSet) uint64 {
	var n uint64
	for hi, p := range s.parts {
		if q := o.parts[hi]; q != nil {
			n += p.AndCardinality(q)
		}
	}
	return n
}

// cardinality is how many ids s holds.
func (s *idSet) cardinality() uint64 {
	var n uint64
	for _, p := range s.parts {
		n += p.GetCardinality()
	}
	return n
}
