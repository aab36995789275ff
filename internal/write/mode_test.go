package write_test

import (
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/floedata/floe/internal/write"
)

func TestChoose(t *testing.T) {
	for _, c := range []struct {
		name  string
		files []write.FileTouch
		ratio float64
		want  write.Mode
		frac  float64
	}{
		{"nothing touched", nil, 0.25, write.MergeOnRead, 0},
		{"untouched files ignored", []write.FileTouch{{0, 100}, {0, 50}}, 0.25, write.MergeOnRead, 0},
		{"0.1% of one file", []write.FileTouch{{1, 1000}}, 0.25, write.MergeOnRead, 0.001},
		{"half of one file", []write.FileTouch{{500, 1000}}, 0.25, write.CopyOnWrite, 0.5},
		{"at the threshold rewrites", []write.FileTouch{{25, 100}}, 0.25, write.CopyOnWrite, 0.25},
		{"just below the threshold", []write.FileTouch{{24, 100}}, 0.25, write.MergeOnRead, 0.24},
		{"scattered over many files", []write.FileTouch{{1, 1000}, {2, 1000}, {1, 1000}, {0, 1000}}, 0.25, write.MergeOnRead, 4.0 / 3000},
		{"pooled by rows: a big lightly touched file outweighs a small full one", []write.FileTouch{{10, 10}, {10, 1000}}, 0.25, write.MergeOnRead, 20.0 / 1010},
		{"pooled by rows: most of one file and a few of another", []write.FileTouch{{900, 1000}, {5, 1000}}, 0.25, write.CopyOnWrite, 905.0 / 2000},
		{"ratio 0 always rewrites", []write.FileTouch{{1, 1_000_000}}, 0, write.CopyOnWrite, 1e-6},
		{"ratio 1 rewrites only fully touched files", []write.FileTouch{{99, 100}}, 1, write.MergeOnRead, 0.99},
		{"ratio 1, every row touched", []write.FileTouch{{100, 100}}, 1, write.CopyOnWrite, 1},
		{"live below touched is clamped", []write.FileTouch{{5, 3}}, 1, write.CopyOnWrite, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, frac := write.Choose(c.files, c.ratio)
			if m != c.want || frac < c.frac-1e-12 || frac > c.frac+1e-12 {
				t.Fatalf("Choose = %v, %g; want %v, %g", m, frac, c.want, c.frac)
			}
		})
	}
}

func TestModeFor(t *testing.T) {
	for _, c := range []struct {
		props iceberg.Properties
		op    write.Op
		want  write.Mode
		err   string
	}{
		{iceberg.Properties{}, write.OpMerge, write.CopyOnWrite, ""},
		{iceberg.Properties{"write.merge.mode": "merge-on-read"}, write.OpMerge, write.MergeOnRead, ""},
		{iceberg.Properties{"write.merge.mode": "merge-on-read"}, write.OpDelete, write.CopyOnWrite, ""},
		{iceberg.Properties{"floe.write.mode": "auto"}, write.OpDelete, write.Auto, ""},
		{iceberg.Properties{"floe.write.mode": "AUTO ", "write.merge.mode": "merge-on-read"}, write.OpMerge, write.Auto, ""},
		{iceberg.Properties{"floe.write.mode": "copy-on-write", "write.update.mode": "merge-on-read"}, write.OpUpdate, write.CopyOnWrite, ""},
		{iceberg.Properties{"floe.write.mode": "merge-on-read"}, write.OpUpdate, write.MergeOnRead, ""},
		{iceberg.Properties{"floe.write.mode": "sometimes"}, write.OpMerge, 0, `floe.write.mode = "sometimes": want copy-on-write, merge-on-read or auto`},
		{iceberg.Properties{"floe.write.mode": ""}, write.OpMerge, 0, `floe.write.mode = "": want`},
		{iceberg.Properties{"write.merge.mode": "auto"}, write.OpMerge, 0, `write.merge.mode = "auto": want copy-on-write or merge-on-read (auto is floe's own: set floe.write.mode=auto`},
	} {
		m, err := write.ModeFor(c.props, c.op)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ModeFor(%v) = %v, %v; want error %q", c.props, m, err, c.err)
			}
			continue
		}
		if err != nil || m != c.want {
			t.Errorf("ModeFor(%v, %v) = %v, %v; want %v", c.props, c.op, m, err, c.want)
		}
	}
}

func TestRewriteRatioFor(t *testing.T) {
	for _, c := range []struct {
		v    string
		want float64
		err  bool
	}{
		{"", write.DefaultRewriteRatio, false}, // unset
		{"0", 0, false},
		{"0.5", 0.5, false},
		{" 1 ", 1, false},
		{"1.5", 0, true},
		{"-0.1", 0, true},
		{"NaN", 0, true},
		{"half", 0, true},
	} {
		props := iceberg.Properties{}
		if c.v != "" {
			props[write.PropRewriteRatio] = c.v
		}
		got, err := write.RewriteRatioFor(props)
		if (err != nil) != c.err || (!c.err && got != c.want) {
			t.Errorf("RewriteRatioFor(%q) = %g, %v; want %g (error %v)", c.v, got, err, c.want, c.err)
		}
		if err != nil && !strings.Contains(err.Error(), write.PropRewriteRatio) {
			t.Errorf("error %q does not name the property", err)
		}
		if cerr := write.CheckModeProperty(write.PropRewriteRatio, c.v); c.v != "" && (cerr != nil) != c.err {
			t.Errorf("CheckModeProperty(%q) = %v", c.v, cerr)
		}
	}
	if err := write.CheckModeProperty("write.delete.mode", "auto"); err == nil {
		t.Error("write.delete.mode=auto accepted")
	}
	if err := write.CheckModeProperty("floe.write.mode", "auto"); err != nil {
		t.Error(err)
	}
	if err := write.CheckModeProperty("other", "auto"); err != nil {
		t.Error(err)
	}
}
