// Package state keeps the build state of incremental transforms in their
// output tables' properties: per input the last processed snapshot (the
// watermark), the input's table identity, the transform's name and its
// semantic version. Because they are table properties, they are committed
// in the same Iceberg commit as the output's data.
package state

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Property keys. A single-input transform uses the seeds' key
// watermark.source-snapshot-id; with several inputs each has its own key.
const (
	PropWatermark       = "watermark.source-snapshot-id"
	PropTransform       = "floe.transform.name"
	PropSemanticVersion = "floe.transform.semantic-version"
	PropInputs          = "floe.transform.inputs"
	propInputPrefix     = "floe.transform.input."
	// NoSnapshot is the watermark of an input that had no snapshot yet.
	NoSnapshot = "NONE"
)

// WatermarkKey is the property holding input's watermark.
func WatermarkKey(input string, single bool) string {
	if single {
		return PropWatermark
	}
	return "watermark." + input + ".source-snapshot-id"
}

// InputState is what a build recorded about one input.
type InputState struct {
	Name     string
	Table    string // the input table's name
	UUID     string // the input table's UUID, to notice a replaced table
	Branch   string
	Snapshot string // snapshot id, or NoSnapshot
}

// SnapshotID parses the watermark; ok is false for NoSnapshot.
func (s InputState) SnapshotID() (int64, bool) {
	if s.Snapshot == NoSnapshot || s.Snapshot == "" {
		return 0, false
	}
	n, err := strconv.ParseInt(s.Snapshot, 10, 64)
	return n, err == nil
}

// Build is the state one build leaves in an output table.
type Build struct {
	Transform       string
	SemanticVersion int
	Inputs          []InputState // sorted by name
}

// Properties renders the state as table properties.
func (b Build) Properties() iceberg.Properties {
	p := iceberg.Properties{
		PropTransform:       b.Transform,
		PropSemanticVersion: strconv.Itoa(b.SemanticVersion),
	}
	single := len(b.Inputs) == 1
	var names []string
	for _, in := range b.Inputs {
		names = append(names, in.Name)
		p[WatermarkKey(in.Name, single)] = in.Snapshot
		p[propInputPrefix+in.Name] = fmt.Sprintf("%s|%s|%s", in.Table, in.UUID, in.Branch)
	}
	p[PropInputs] = strings.Join(names, ",")
	return p
}

// Keys lists the property keys the state occupies, for compare-and-swap
// checks.
func (b Build) Keys() []string {
	var out []string
	for k := range b.Properties() {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Read returns the build state recorded in an output table's properties;
// ok is false when there is none (a table floe never built).
func Read(props iceberg.Properties) (Build, bool) {
	name, ok := props[PropTransform]
	if !ok {
		if wm, ok := props[PropWatermark]; ok {
			// A table written by hand-written code following the seeds: a
			// single watermark and nothing else.
			return Build{Inputs: []InputState{{Snapshot: wm}}}, true
		}
		return Build{}, false
	}
	b := Build{Transform: name}
	b.SemanticVersion, _ = strconv.Atoi(props[PropSemanticVersion])
	list := props[PropInputs]
	if list == "" {
		return b, true
	}
	names := strings.Split(list, ",")
	single := len(names) == 1
	for _, n := range names {
		in := InputState{Name: n, Snapshot: props[WatermarkKey(n, single)]}
		if v, ok := props[propInputPrefix+n]; ok {
			parts := strings.SplitN(v, "|", 3)
			for len(parts) < 3 {
				parts = append(parts, "")
			}
			in.Table, in.UUID, in.Branch = parts[0], parts[1], parts[2]
		}
		b.Inputs = append(b.Inputs, in)
	}
	return b, true
}

// Expect returns the current values of the state's keys in props ("" for
// absent ones): what a commit must still find to be sure no other build
// committed in between.
func Expect(props iceberg.Properties, keys []string) map[string]string {
	out := map[string]string{}
	for _, k := range keys {
		out[k] = props[k]
	}
	return out
}

// Reachable reports whether the watermark snapshot wm is the branch head or
// an ancestor of it, judged by parent ids (an expired watermark that is
// still the parent of a retained ancestor counts: the range after it is
// complete).
func Reachable(meta table.Metadata, head *table.Snapshot, wm int64) bool {
	seen := map[int64]bool{}
	for s := head; s != nil && !seen[s.SnapshotID]; {
		if s.SnapshotID == wm {
			return true
		}
		seen[s.SnapshotID] = true
		if s.ParentSnapshotID == nil {
			return false
		}
		if *s.ParentSnapshotID == wm {
			return true
		}
		s = meta.SnapshotByID(*s.ParentSnapshotID)
	}
	return false
}

// Between lists the snapshots after wm (exclusive) up to head (inclusive),
// oldest first; wm must be Reachable.
func Between(meta table.Metadata, head *table.Snapshot, wm *int64) []*table.Snapshot {
	var out []*table.Snapshot
	seen := map[int64]bool{}
	for s := head; s != nil && !seen[s.SnapshotID]; {
		if wm != nil && s.SnapshotID == *wm {
			break
		}
		seen[s.SnapshotID] = true
		out = append(out, s)
		if s.ParentSnapshotID == nil || (wm != nil && *s.ParentSnapshotID == *wm) {
			break
		}
		s = meta.SnapshotByID(*s.ParentSnapshotID)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}
