package tableops

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestSetBranchLeavesRetentionUnset: the update floe sends to create or move
// a branch must not carry retention values; Apache Iceberg's REST server
// rejects the -1 that meant "unset" (found by interop.TestFloeThroughREST).
func TestSetBranchLeavesRetentionUnset(t *testing.T) {
	b, err := json.Marshal(setBranch("audit", 42))
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	for _, field := range []string{"min-snapshots-to-keep", "max-snapshot-age-ms", "max-ref-age-ms"} {
		if strings.Contains(got, field) {
			t.Errorf("update %s sets %s; want it left to the table's default", got, field)
		}
	}
	for _, want := range []string{`"ref-name":"audit"`, `"snapshot-id":42`, `"type":"branch"`} {
		if !strings.Contains(got, want) {
			t.Errorf("update %s lacks %s", got, want)
		}
	}
}
