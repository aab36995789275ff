package catalog

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSourceStorage(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "floe.yaml")
	err := os.WriteFile(cfg, []byte(`catalog:
  lake:
    type: sql
    uri: `+filepath.Join(dir, "c.db")+`
    warehouse: `+filepath.Join(dir, "wh")+`
    s3.endpoint: http://catalog:9000
    s3.access-key-id: cat-key
    s3.secret-access-key: cat-secret
    gcs.no-auth: true
    token: not-storage
storage:
  other:
    s3.region: eu-west-1
    s3.path-style-access: false
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := Open(ctx, Options{Name: "lake", ConfigFile: cfg})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, tc := range []struct {
		name      string
		cat       *Catalog
		profile   string
		overrides map[string]string
		want      map[string]string
		err       string
	}{
		{name: "the catalog's storage keys only", cat: c,
			want: map[string]string{"s3.endpoint": "http://catalog:9000", "s3.access-key-id": "cat-key", "s3.secret-access-key": "cat-secret", "gcs.no-auth": "true"}},
		{name: "overrides on top", cat: c, overrides: map[string]string{"s3.endpoint": "http://other:9000"},
			want: map[string]string{"s3.endpoint": "http://other:9000", "s3.access-key-id": "cat-key", "s3.secret-access-key": "cat-secret", "gcs.no-auth": "true"}},
		{name: "a profile replaces the catalog's", cat: c, profile: "other",
			want: map[string]string{"s3.region": "eu-west-1", "s3.path-style-access": "false"}},
		{name: "a profile without a catalog", profile: "other", overrides: map[string]string{"s3.region": "us-west-2"},
			want: map[string]string{"s3.region": "us-west-2", "s3.path-style-access": "false"}},
		{name: "no catalog, no profile", overrides: map[string]string{"a": "b"}, want: map[string]string{"a": "b"}},
		{name: "unknown profile", cat: c, profile: "nope", err: `no storage profile named "nope" in ` + cfg + ` (configured: other)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := ""
			if tc.cat == nil {
				file = cfg
			}
			got, err := SourceStorage(tc.cat, file, tc.profile, tc.overrides)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrConfig) {
					t.Fatalf("got %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestWarehouseSchemeChecked(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "floe.yaml")
	if err := os.WriteFile(cfg, []byte("catalog:\n  x:\n    type: sql\n    uri: "+filepath.Join(dir, "c.db")+"\n    warehouse: hdfs://nn/wh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), Options{Name: "x", ConfigFile: cfg})
	if err == nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), `warehouse hdfs://nn/wh: no file IO for scheme "hdfs"`) {
		t.Fatalf("got %v", err)
	}
}
