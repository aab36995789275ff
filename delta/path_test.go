package delta

import (
	"errors"
	"testing"
)

func TestResolvePath(t *testing.T) {
	local, err := parseRoot("/data/tbl/")
	if err != nil {
		t.Fatal(err)
	}
	s3, err := parseRoot("s3://bucket/warehouse/tbl")
	if err != nil {
		t.Fatal(err)
	}
	abfs, err := parseRoot("abfss://lake@acct.dfs.core.windows.net/delta/tbl")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		root tableRoot
		raw  string
		want string
		err  error
	}{
		{"relative", local, "part-0.parquet", "/data/tbl/part-0.parquet", nil},
		{"percent-encoded", local, "test%25file%25prefix-part-0.parquet", "/data/tbl/test%file%prefix-part-0.parquet", nil},
		{"partition dir with space", local, "p=a%20b/part-0.parquet", "/data/tbl/p=a b/part-0.parquet", nil},
		{"dot segments inside", local, "a/../b/./c.parquet", "/data/tbl/b/c.parquet", nil},
		{"escapes with ..", local, "../other/part-0.parquet", "", ErrPathEscapesRoot},
		{"escapes with encoded ..", local, "%2E%2E/x.parquet", "", ErrPathEscapesRoot},
		{"absolute file URI inside", local, "file:///data/tbl/x/part-0.parquet", "/data/tbl/x/part-0.parquet", nil},
		{"absolute file URI outside", local, "file:///data/other/part-0.parquet", "", ErrPathEscapesRoot},
		{"absolute file URI prefix trick", local, "file:///data/tbl2/part-0.parquet", "", ErrPathEscapesRoot},
		{"absolute path inside", local, "/data/tbl/part-0.parquet", "/data/tbl/part-0.parquet", nil},
		{"absolute path outside", local, "/etc/passwd", "", ErrPathEscapesRoot},
		{"bad escape", local, "part-%zz.parquet", "", ErrCorruptLog},
		{"empty", local, "", "", ErrCorruptLog},
		{"s3 relative", s3, "p=1/part-0.parquet", "s3://bucket/warehouse/tbl/p=1/part-0.parquet", nil},
		{"s3 absolute inside", s3, "s3://bucket/warehouse/tbl/part-0.parquet", "s3://bucket/warehouse/tbl/part-0.parquet", nil},
		{"s3 other bucket", s3, "s3://other/warehouse/tbl/part-0.parquet", "", ErrPathEscapesRoot},
		{"s3 local file", s3, "file:///tmp/part-0.parquet", "", ErrPathEscapesRoot},
		{"abfss relative keeps the container", abfs, "p=1/part-0.parquet", "abfss://lake@acct.dfs.core.windows.net/delta/tbl/p=1/part-0.parquet", nil},
		{"abfss absolute inside", abfs, "abfss://lake@acct.dfs.core.windows.net/delta/tbl/part-0.parquet", "abfss://lake@acct.dfs.core.windows.net/delta/tbl/part-0.parquet", nil},
		{"abfss other container", abfs, "abfss://other@acct.dfs.core.windows.net/delta/tbl/part-0.parquet", "", ErrPathEscapesRoot},
		{"abfss no container", abfs, "abfss://acct.dfs.core.windows.net/delta/tbl/part-0.parquet", "", ErrPathEscapesRoot},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.root.resolve(tc.raw)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("want %v, got %q, %v", tc.err, got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParseRoot(t *testing.T) {
	tests := []struct{ in, want string }{
		{"/data/tbl", "/data/tbl"},
		{"/data/tbl/", "/data/tbl"},
		{"file:///data/tbl", "/data/tbl"},
		{"s3://bucket/a/b/", "s3://bucket/a/b"},
		{"gs://bucket", "gs://bucket/"},
		{"abfss://lake@acct.dfs.core.windows.net/delta/tbl/", "abfss://lake@acct.dfs.core.windows.net/delta/tbl"},
		{"wasbs://lake@acct.blob.core.windows.net", "wasbs://lake@acct.blob.core.windows.net/"},
		{"s3://user:secret@bucket/t", "s3://user@bucket/t"}, // a password is never kept
	}
	for _, tc := range tests {
		r, err := parseRoot(tc.in)
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if r.String() != tc.want {
			t.Errorf("%s: got %q, want %q", tc.in, r, tc.want)
		}
	}
	if _, err := parseRoot(""); !errors.Is(err, ErrNotATable) {
		t.Errorf("empty location: got %v", err)
	}
}

func TestDeletionVectorLocation(t *testing.T) {
	tbl := &Table{root: tableRoot{path: "/data/tbl"}}
	uuid := EncodeZ85([]byte{0x61, 0xd1, 0x6c, 0x75, 0x69, 0x94, 0x46, 0xb7, 0xa1, 0x5b, 0x8b, 0x53, 0x88, 0x52, 0xe5, 0x0e})
	off := int32(1)
	tests := []struct {
		dv   DeletionVector
		want string
		err  error
	}{
		{DeletionVector{StorageType: "u", PathOrInlineDV: uuid, Offset: &off}, "/data/tbl/deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin", nil},
		{DeletionVector{StorageType: "u", PathOrInlineDV: "ab" + uuid, Offset: &off}, "/data/tbl/ab/deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin", nil},
		{DeletionVector{StorageType: "u", PathOrInlineDV: "short", Offset: &off}, "", ErrCorruptDeletionVector},
		{DeletionVector{StorageType: "p", PathOrInlineDV: "file:///data/tbl/dv.bin", Offset: &off}, "/data/tbl/dv.bin", nil},
		{DeletionVector{StorageType: "p", PathOrInlineDV: "file:///elsewhere/dv.bin", Offset: &off}, "", ErrPathEscapesRoot},
	}
	for _, tc := range tests {
		got, err := tbl.dvLocation(&tc.dv)
		if tc.err != nil {
			if !errors.Is(err, tc.err) {
				t.Errorf("%+v: want %v, got %q, %v", tc.dv, tc.err, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%+v: got %q, %v; want %q", tc.dv, got, err, tc.want)
		}
	}
}
