package catalog

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"
)

// TestNameLimits: names that are not valid UTF-8, hold control characters
// or have a part longer than MaxNamePartLength are refused, with a message
// that quotes a long name once and shortened.
func TestNameLimits(t *testing.T) {
	long := strings.Repeat("y", MaxNamePartLength+1)
	for _, tc := range []struct {
		in, want string
	}{
		{"ns.\xff\xfe", "not valid UTF-8"},
		{"n\xc3.t", "not valid UTF-8"},
		{"ns.a\nb", "control character"},
		{"ns.a\x00b", "control character"},
		{"ns." + long, "longer than 255 bytes"},
		{long + ".t", "longer than 255 bytes"},
	} {
		_, err := ParseTableName(tc.in)
		if !errors.Is(err, ErrBadName) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%.40q: got %v, want %v mentioning %q", tc.in, err, ErrBadName, tc.want)
			continue
		}
		if strings.Count(err.Error(), strings.Repeat("y", 20)) > 1 || len(err.Error()) > 200 {
			t.Errorf("%.40q: the message repeats or quotes too much: %s", tc.in, err)
		}
	}
	ok := strings.Repeat("é", MaxNamePartLength/2) // 254 bytes
	if _, err := ParseTableName("ns." + ok); err != nil {
		t.Errorf("a 254-byte name: %v", err)
	}
	if err := CheckIdent(table.Identifier{"ns", "\xff"}); !errors.Is(err, ErrBadName) {
		t.Errorf("CheckIdent: %v", err)
	}
}
