package catalog_test

import (
	"testing"

	"github.com/floedata/floe/catalog"
)

func TestFileURIPath(t *testing.T) {
	for _, c := range []struct {
		loc, want string
		ok        bool
	}{
		{"file:///data/wh/t", "/data/wh/t", true},
		{"file:/data/wh/t", "/data/wh/t", true},
		{"file://localhost/data/t", "/data/t", true},
		{"file:///data/a%20b/t", "/data/a b/t", true},
		{"file:///data/a%2520b", "/data/a%20b", true},
		{"file:///data/p=a%3Ab/f.parquet", "/data/p=a:b/f.parquet", true},
		{"file:///data/bad%b", "/data/bad%b", true}, // not a valid URI: literal
		{"FILE:///data/x", "/data/x", true},
		{"/data/wh/t", "", false},
		{"s3://bucket/t", "", false},
		{"files/x", "", false},
	} {
		got, ok := catalog.FileURIPath(c.loc)
		if got != c.want || ok != c.ok {
			t.Errorf("FileURIPath(%q) = %q, %v; want %q, %v", c.loc, got, ok, c.want, c.ok)
		}
	}
	// FileURI encodes so that the path comes back whatever it holds.
	for _, p := range []string{"/data/wh", "/data/sp ace", "/data/(paren)!*", "/data/w%20x", "/data/bad%b", "/data/ha#sh", "/data/q?m", "/data/a+b&c=d", "/data/ü"} {
		if got, ok := catalog.FileURIPath(catalog.FileURI(p)); !ok || got != p {
			t.Errorf("FileURIPath(FileURI(%q)) = %q (URI %s)", p, got, catalog.FileURI(p))
		}
	}
	// The literal spelling keeps escapes as they are written.
	if got := catalog.LiteralLocation("file:///data/p=a%3Ab/f.parquet", ""); got != "/data/p=a%3Ab/f.parquet" {
		t.Errorf("LiteralLocation: %q", got)
	}
	if got := catalog.NormalizeLocation("file:///data/a%20b/", ""); got != "/data/a b" {
		t.Errorf("NormalizeLocation: %q", got)
	}
}

// FileURI changes nothing but "%", "#" and "?": the locations floe wrote
// before keep their spelling.
func TestFileURIEscapesOnlyWhatMust(t *testing.T) {
	for p, want := range map[string]string{
		"/data/(paren)!*'": "file:///data/(paren)!*'",
		"/data/sp ace":     "file:///data/sp ace",
		"/data/w%20x#a?b":  "file:///data/w%2520x%23a%3Fb",
	} {
		if got := catalog.FileURI(p); got != want {
			t.Errorf("FileURI(%q) = %q, want %q", p, got, want)
		}
	}
}
