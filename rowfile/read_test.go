package rowfile

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/cockroachdb/datadriven"
)

// TestReadScripts runs the datadriven scripts in testdata/read_*:
//
//	schema            target columns, one "name type [not null]" per line
//	extra             extra columns, same syntax
//	read name=f.csv [format=..] [ignore-unknown] [null=X] [batch=N] [out=jsonl|csv|table|json]
//	                  [crlf] [nonl] [escapes]
//	  <file content>
//	----
//	<rows as JSON Lines, or the error with its sentinel>
//
// crlf turns line ends into CRLF, nonl drops the final line end, escapes
// interprets Go escapes (\t, \x00, \u00e9) in the content.
func TestReadScripts(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		if !strings.Contains(path, "read_") {
			t.Skip()
		}
		var target *arrow.Schema
		var extra []arrow.Field
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "schema":
				target = mustSchema(t, d.Input)
				extra = nil
				return ""
			case "extra":
				fields, err := parseTestFields(d.Input)
				if err != nil {
					t.Fatal(err)
				}
				extra = fields
				return ""
			case "read":
				opts := ReadOptions{Target: target, Extra: extra}
				name := "input.csv"
				out := OutputJSONL
				content := d.Input
				nl := "\n"
				for _, a := range d.CmdArgs {
					val := ""
					if len(a.Vals) > 0 {
						val = a.Vals[0]
					}
					switch a.Key {
					case "name":
						name = val
					case "format":
						f, err := ParseFormat(val)
						if err != nil {
							t.Fatal(err)
						}
						opts.Format = f
					case "ignore-unknown":
						opts.IgnoreUnknown = true
					case "null":
						opts.NullString = val
					case "batch":
						n, _ := strconv.Atoi(val)
						opts.BatchSize = n
					case "out":
						f, err := ParseOutputFormat(val)
						if err != nil {
							t.Fatal(err)
						}
						out = f
					case "crlf":
						nl = "\r\n"
					case "nonl":
						nl = ""
					case "escapes":
						u, err := strconv.Unquote(`"` + strings.ReplaceAll(content, "\n", `\n`) + `"`)
						if err != nil {
							t.Fatalf("escapes: %v", err)
						}
						content = u
					default:
						t.Fatalf("unknown argument %s", a.Key)
					}
				}
				if nl == "\r\n" {
					content = strings.ReplaceAll(content, "\n", nl)
				}
				if content != "" {
					content += nl
				}
				return readAllAs(t, []byte(content), name, opts, out)
			}
			t.Fatalf("unknown command %q", d.Cmd)
			return ""
		})
	})
}

func TestParseFormat(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Format
		err  string
	}{
		{"csv", FormatCSV, ""},
		{"CSV", FormatCSV, ""},
		{"jsonl", FormatJSONL, ""},
		{"ndjson", FormatJSONL, ""},
		{"json", FormatJSONL, ""},
		{"parquet", FormatParquet, ""},
		{"parq", FormatParquet, ""},
		{"", FormatAuto, ""},
		{"auto", FormatAuto, ""},
		{"xlsx", FormatAuto, `unsupported format: input format "xlsx" (want csv, jsonl, json or parquet)`},
	} {
		got, err := ParseFormat(tc.in)
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("ParseFormat(%q) error = %v, want %s", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseFormat(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		path string
		want Format
		ok   bool
	}{
		{"a.csv", FormatCSV, true},
		{"dir/B.CSV", FormatCSV, true},
		{"a.jsonl", FormatJSONL, true},
		{"a.ndjson", FormatJSONL, true},
		{"a.json", FormatJSONL, true},
		{"a.parquet", FormatParquet, true},
		{"a.parq", FormatParquet, true},
		{"a.txt", FormatAuto, false},
		{"noext", FormatAuto, false},
	} {
		got, err := FormatFromPath(tc.path)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("FormatFromPath(%q) = %v, %v", tc.path, got, err)
		}
	}
	for _, tc := range []struct {
		in   string
		want OutputFormat
		ok   bool
	}{
		{"table", OutputTable, true}, {"jsonl", OutputJSONL, true}, {"ndjson", OutputJSONL, true},
		{"json", OutputJSON, true}, {"csv", OutputCSV, true}, {"parquet", OutputParquet, true},
		{"Parquet", OutputParquet, true}, {"xml", OutputTable, false},
	} {
		got, err := ParseOutputFormat(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseOutputFormat(%q) = %v, %v", tc.in, got, err)
		}
		if tc.ok && got.String() != strings.ToLower(tc.in) && tc.in != "ndjson" {
			t.Errorf("%v.String() = %q", got, got.String())
		}
	}
	_ = fmt.Sprint
}
