package changelog

// hashIndex maps 64-bit hashes to int32 values: an open-addressing table
// with linear probing and backward-shift deletion. The pairer inserts and
// deletes a key for almost every row it reads while only a window of keys
// is live at once; Go's map leaves a tombstone per deletion there, and
// lookups of absent keys then probe ever longer (a profile showed them at
// a sixth of the changelog's time). Backward-shift deletion leaves none.
// The keys must be well mixed (they are hashes): the slot is the key's
// low bits.
type hashIndex struct {
	slots []hashSlot
	n     int
}

type hashSlot struct {
	key  uint64
	val  int32
	used bool
}

func newHashIndex() *hashIndex { return &hashIndex{slots: make([]hashSlot, 16)} }

func (t *hashIndex) len() int { return t.n }

// find returns the slot holding key, or the empty slot where it would go.
func (t *hashIndex) find(key uint64) int {
	mask := len(t.slots) - 1
	for i := int(key) & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if !s.used || s.key == key {
			return i
		}
	}
}

func (t *hashIndex) get(key uint64) (int32, bool) {
	s := t.slots[t.find(key)]
	return s.val, s.used
}

func (t *hashIndex) set(key uint64, val int32) {
	i := t.find(key)
	if t.slots[i].used {
		t.slots[i].val = val
		return
	}
	t.slots[i] = hashSlot{key: key, val: val, used: true}
	t.n++
	if 2*t.n > len(t.slots) {
		old := t.slots
		t.slots = make([]hashSlot, 2*len(old))
		for _, s := range old {
			if s.used {
				t.slots[t.find(s.key)] = s
			}
		}
	}
}

func (t *hashIndex) del(key uint64) {
	i := t.find(key)
	if !t.slots[i].used {
		return
	}
	t.n--
	mask := len(t.slots) - 1
	// Shift back the entries after i whose probe sequence passes i, so
	// that no lookup meets a hole before its key.
	for j := (i + 1) & mask; t.slots[j].used; j = (j + 1) & mask {
		home := int(t.slots[j].key) & mask
		if (j-home)&mask >= (j-i)&mask {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = hashSlot{}
}
