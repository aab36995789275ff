package delta

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"
)

func TestDecodeZ85(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		n       int
		want    string // hex
		wantErr string
	}{
		// ZeroMQ RFC 32 test vector.
		{name: "rfc vector", in: "HelloWorld", n: 8, want: "864fd26fb559f75b"},
		{name: "empty", in: "", n: 0, want: ""},
		// Delta-Java pads with zero bytes and truncates.
		{name: "java padding, 2 of 4 bytes", in: "Hed^H", n: 2, want: "864f"},
		{name: "java padding, 3 of 4 bytes", in: "HelloWorld", n: 7, want: "864fd26fb559f7"},
		// Rust z85 crate: the tail block's leading '#' count missing bytes.
		{name: "rust tail, 2 bytes", in: "##0rr", n: 2, want: "0912"}, // 27*85+27
		{name: "rust tail, 1 byte", in: "###03", n: 1, want: "03"},
		{name: "rust tail, 3 bytes", in: "Hello#jt#7", n: 7, want: "864fd26fb559f7"},
		{name: "not a multiple of 5", in: "Hello1", n: 4, wantErr: "not a multiple of 5"},
		{name: "length mismatch", in: "HelloWorld", n: 3, wantErr: "cannot hold 3 bytes"},
		{name: "bad character", in: "Hell~", n: 4, wantErr: "invalid z85 character"},
		{name: "block overflow", in: "#####", n: 4, wantErr: "does not encode 4 bytes"},
		{name: "rust tail overflow", in: "##%%%", n: 2, wantErr: "overflows 2 bytes"},
		{name: "rust tail with wrong count", in: "##0rr", n: 3, wantErr: "does not encode 3 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeZ85(tc.in, tc.n)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("want error containing %q, got %v (%x)", tc.wantErr, err, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if hex.EncodeToString(got) != tc.want {
				t.Fatalf("got %x, want %s", got, tc.want)
			}
		})
	}
}

// TestDecodeZ85FixtureInlineDVs decodes the inline deletion vectors of
// kernel-rs cdf-table-with-dv: versions 3 and 4 are Delta-Java encoded
// (sizes 40 and 36, multiples of 4), version 5 holds 34 bytes with the Rust
// crate's "##" tail. Each must parse as a bitmap of the rows kernel-rs's
// test (cdf_with_deletion_vector) says are deleted.
func TestDecodeZ85FixtureInlineDVs(t *testing.T) {
	tests := []struct {
		z85  string
		size int
		rows []uint64
	}{
		{"^Bg9^0rr910000000000iXQKl0rr91000935c8Xg000311onP9", 40, []uint64{0, 1, 4, 5}},
		{"^Bg9^0rr910000000000iXQKl0rr91000315c8Xg000f5", 36, []uint64{0, 5}},
		{"^Bg9^0rr910000000000iXQKl0rr91000005c8Xg##093", 34, []uint64{3}},
	}
	for _, tc := range tests {
		data, err := DecodeZ85(tc.z85, tc.size)
		if err != nil {
			t.Fatalf("%s: %v", tc.z85, err)
		}
		bm, err := parseDVBitmap(data)
		if err != nil {
			t.Fatalf("%s: %v", tc.z85, err)
		}
		if got := bm.ToArray(); !equalRows(got, tc.rows) {
			t.Errorf("%s: rows %v, want %v", tc.z85, got, tc.rows)
		}
	}
}

func equalRows(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestZ85RoundTrip(t *testing.T) {
	for n := 0; n < 40; n++ {
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(i*37 + n)
		}
		enc := EncodeZ85(data)
		got, err := DecodeZ85(enc, n)
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("n=%d: got %x, want %x", n, got, data)
		}
	}
}

func TestDeletionVectorRoundTrip(t *testing.T) {
	rows := []uint64{0, 3, 70000, 1 << 33}
	data, err := EncodeDeletionVector(rows)
	if err != nil {
		t.Fatal(err)
	}
	bm, err := parseDVBitmap(data)
	if err != nil {
		t.Fatal(err)
	}
	if got := bm.ToArray(); !equalRows(got, rows) {
		t.Fatalf("got %v, want %v", got, rows)
	}
	bad := append([]byte(nil), data...)
	bad[0] ^= 1
	if _, err := parseDVBitmap(bad); err == nil || !strings.Contains(err.Error(), "magic number") {
		t.Fatalf("want a magic number error, got %v", err)
	}
	if _, err := parseDVBitmap(append(append([]byte(nil), data...), 0)); err == nil || !strings.Contains(err.Error(), "unexpected bytes") {
		t.Fatalf("want a trailing bytes error, got %v", err)
	}
}
