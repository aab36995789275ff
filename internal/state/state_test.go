package state

import (
	"testing"

	"github.com/apache/iceberg-go"
)

func TestRoundTrip(t *testing.T) {
	for _, b := range []Build{
		{Transform: "t", SemanticVersion: 3, Inputs: []InputState{{Name: "source", Table: "ns.src", UUID: "u", Snapshot: "42"}}},
		{Transform: "two", SemanticVersion: 1, Inputs: []InputState{
			{Name: "a", Table: "ns.a", UUID: "ua", Branch: "dev", Snapshot: NoSnapshot},
			{Name: "b", Table: "ns.b", UUID: "ub", Snapshot: "7"}}},
	} {
		p := b.Properties()
		if len(b.Inputs) == 1 && p[PropWatermark] != b.Inputs[0].Snapshot {
			t.Errorf("a single input uses the seeds' key: %v", p)
		}
		got, ok := Read(p)
		if !ok || got.Transform != b.Transform || got.SemanticVersion != b.SemanticVersion || len(got.Inputs) != len(b.Inputs) {
			t.Fatalf("read back %+v from %v", got, p)
		}
		for i := range b.Inputs {
			if got.Inputs[i] != b.Inputs[i] {
				t.Errorf("input %d: %+v want %+v", i, got.Inputs[i], b.Inputs[i])
			}
		}
	}
	// A hand-written watermark (the seeds' native example).
	got, ok := Read(iceberg.Properties{PropWatermark: "99"})
	if !ok || len(got.Inputs) != 1 || got.Inputs[0].Snapshot != "99" {
		t.Fatalf("%+v", got)
	}
	if id, ok := got.Inputs[0].SnapshotID(); !ok || id != 99 {
		t.Fatal(id)
	}
	if _, ok := Read(iceberg.Properties{}); ok {
		t.Fatal("no state in empty properties")
	}
}
