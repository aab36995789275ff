package scan

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// Partitions is a set of partitions (a spec and a partition tuple each):
// those of the files a change touches. A state loaded for them
// (LoadStateIn) holds every file of those partitions, and so every delete
// file that can apply to their data files.
type Partitions struct {
	tuples map[int32][]map[int]any // by spec id
	keys   map[string]bool
	// all is set when a file of an unpartitioned spec was added: its
	// equality deletes apply to every partition.
	all bool
	// unpartitioned are the table's unpartitioned spec ids.
	unpartitioned map[int32]bool
}

// NewPartitions returns an empty set for the specs of meta.
func NewPartitions(meta table.Metadata) *Partitions {
	p := &Partitions{tuples: map[int32][]map[int]any{}, keys: map[string]bool{}, unpartitioned: map[int32]bool{}}
	for _, s := range meta.PartitionSpecs() {
		if s.IsUnpartitioned() {
			p.unpartitioned[int32(s.ID())] = true
		}
	}
	return p
}

// Add adds the partition of df.
func (p *Partitions) Add(df iceberg.DataFile) {
	if p.unpartitioned[df.SpecID()] {
		p.all = true
		return
	}
	k := partKey(df)
	if p.keys[k] {
		return
	}
	p.keys[k] = true
	p.tuples[df.SpecID()] = append(p.tuples[df.SpecID()], df.Partition())
}

// All reports whether the set is every partition.
func (p *Partitions) All() bool { return p == nil || p.all }

// Key identifies the set.
func (p *Partitions) Key() string {
	if p.All() {
		return "*"
	}
	ks := make([]string, 0, len(p.keys))
	for k := range p.keys {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ";")
}

// mayHold reports whether manifest m may list a file of one of the
// partitions, by its spec and its partition field summaries (conservative:
// true whenever a summary cannot rule a partition out). Manifests of
// unpartitioned specs may hold equality deletes that apply everywhere, so
// they are always read.
func (p *Partitions) mayHold(meta table.Metadata, m iceberg.ManifestFile) bool {
	if p.All() || p.unpartitioned[m.PartitionSpecID()] {
		return true
	}
	tuples := p.tuples[m.PartitionSpecID()]
	if len(tuples) == 0 {
		// A delete file of another partitioned spec applies only to data
		// files of its own spec.
		return false
	}
	spec := meta.PartitionSpecByID(int(m.PartitionSpecID()))
	sums := m.Partitions()
	if spec == nil || len(sums) != spec.NumFields() {
		return true
	}
	types := make([]iceberg.Type, spec.NumFields())
	for i := range types {
		f := spec.Field(i)
		src, ok := sourceType(meta, f.SourceID())
		if !ok {
			return true
		}
		types[i] = f.Transform.ResultType(src)
	}
	for _, t := range tuples {
		if tupleMayBeIn(spec, types, sums, t) {
			return true
		}
	}
	return false
}

func sourceType(meta table.Metadata, id int) (iceberg.Type, bool) {
	for _, sc := range meta.Schemas() {
		if f, ok := sc.FindFieldByID(id); ok {
			return f.Type, true
		}
	}
	return nil, false
}

// tupleMayBeIn reports whether the partition tuple t may lie within the
// field summaries sums.
func tupleMayBeIn(spec *iceberg.PartitionSpec, types []iceberg.Type, sums []iceberg.FieldSummary, t map[int]any) bool {
	for i, s := range sums {
		v, ok := t[spec.Field(i).FieldID]
		if !ok {
			continue
		}
		if v == nil {
			if !s.ContainsNull {
				return false
			}
			continue
		}
		if s.LowerBound == nil || s.UpperBound == nil {
			continue // no bounds kept: cannot tell
		}
		lo, err1 := iceberg.LiteralFromBytes(types[i], *s.LowerBound)
		hi, err2 := iceberg.LiteralFromBytes(types[i], *s.UpperBound)
		if err1 != nil || err2 != nil {
			continue
		}
		if c, ok := compareValues(v, lo.Any()); ok && c < 0 {
			return false
		}
		if c, ok := compareUpper(v, hi.Any()); ok && c > 0 {
			return false
		}
	}
	return true
}

// compareValues compares a partition value with a bound's value, when both
// are of one ordered kind.
func compareValues(a, b any) (int, bool) {
	if x, ok := asInt(a); ok {
		if y, ok := asInt(b); ok {
			return cmp.Compare(x, y), true
		}
		return 0, false
	}
	switch x := a.(type) {
	case float32:
		if y, ok := b.(float32); ok && !math.IsNaN(float64(x)) && !math.IsNaN(float64(y)) {
			return cmp.Compare(x, y), true
		}
	case float64:
		if y, ok := b.(float64); ok && !math.IsNaN(x) && !math.IsNaN(y) {
			return cmp.Compare(x, y), true
		}
	case string:
		if y, ok := b.(string); ok {
			return strings.Compare(x, y), true
		}
	case []byte:
		if y, ok := b.([]byte); ok {
			return bytes.Compare(x, y), true
		}
	}
	return 0, false
}

// compareUpper is compareValues against an upper bound, which for strings
// and binary may be truncated: a value is only above it when its prefix
// of the bound's length is.
func compareUpper(a, b any) (int, bool) {
	switch x := a.(type) {
	case string:
		if y, ok := b.(string); ok {
			if len(x) > len(y) {
				x = x[:len(y)]
			}
			return strings.Compare(x, y), true
		}
		return 0, false
	case []byte:
		if y, ok := b.([]byte); ok {
			if len(x) > len(y) {
				x = x[:len(y)]
			}
			return bytes.Compare(x, y), true
		}
		return 0, false
	}
	return compareValues(a, b)
}

func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case int:
		return int64(x), true
	case iceberg.Date:
		return int64(x), true
	case iceberg.Time:
		return int64(x), true
	case iceberg.Timestamp:
		return int64(x), true
	case iceberg.TimestampNano:
		return int64(x), true
	}
	return 0, false
}

// LoadStateIn is LoadState restricted to partitions parts: it reads only
// the manifests whose partition summaries may list a file of one of them
// (all of them when parts is nil or All). The state holds every live file
// of those partitions and every delete file that can apply to their data
// files (position deletes and deletion vectors live in their data file's
// partition, equality deletes in it or in an unpartitioned spec), so
// DataFile and DeletesFor answer correctly for their files; files of
// other partitions may be missing.
func LoadStateIn(ctx context.Context, fs iceio.IO, meta table.Metadata, snap *table.Snapshot, parts *Partitions) (*State, error) {
	if parts.All() {
		return LoadState(ctx, fs, meta, snap)
	}
	return loadState(ctx, fs, meta, snap, func(m iceberg.ManifestFile) bool { return parts.mayHold(meta, m) })
}

// loadState reads the manifests of snap that keep returns true for,
// through the ManifestCache of ctx if it has one (WithManifestCache).
func loadState(ctx context.Context, fs iceio.IO, meta table.Metadata, snap *table.Snapshot, keep func(iceberg.ManifestFile) bool) (*State, error) {
	st := newState(meta, snap)
	if snap == nil {
		return st, nil
	}
	manifests, err := snap.Manifests(fs)
	if err != nil {
		return nil, fmt.Errorf("snapshot %d: read manifest list %s: %w", snap.SnapshotID, snap.ManifestList, err)
	}
	cache := manifestCacheOf(ctx) // nil: none
	for _, m := range manifests {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if keep != nil && !keep(m) {
			continue
		}
		es, err := cache.entriesOf(ctx, fs, m)
		if err != nil {
			return nil, fmt.Errorf("snapshot %d: %w", snap.SnapshotID, err)
		}
		for _, e := range es {
			st.add(e)
		}
	}
	return st, nil
}
