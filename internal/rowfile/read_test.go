package rowfile

import (
	"path/filepath"
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
		if strings.Contains(filepath.ToSlash(path), "/fuzz/") || !strings.Contains(path, "read_") && !strings.Contains(path, "write_") {
			t.Skip()
		}
		var target *arrow.Schema
		var extra []arrow.Field
		files := map[string][]byte{}
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
			case "parquet":
				// Input: the file's schema, a line "rows:", then the rows as
				// JSON Lines. The file is kept for later "read name=...".
				name := d.CmdArgs[0].Vals[0]
				schemaText, rows, ok := strings.Cut(d.Input, "rows:\n")
				if !ok {
					t.Fatal("parquet: want schema, rows:, rows")
				}
				files[name] = writeParquetFromJSONL(t, mustSchema(t, schemaText), rows)
				return ""
			case "truncate":
				name := d.CmdArgs[0].Vals[0]
				n, _ := strconv.Atoi(d.CmdArgs[1].Vals[0])
				files[name] = files[name][:n]
				return ""
			case "read":
				opts := ReadOptions{Target: target, Extra: extra}
				var wopts []WriterOption
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
					case "page":
						n, _ := strconv.Atoi(val)
						wopts = append(wopts, WithPageRows(n))
					case "width":
						n, _ := strconv.Atoi(val)
						wopts = append(wopts, WithMaxCellWidth(n))
					case "crlf":
						nl = "\r\n"
					case "nonl":
						nl = ""
					case "escapes":
						content = unescapeTest(content)
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
				data := []byte(content)
				if f, ok := files[name]; ok {
					data = f
				}
				return readAllAs(t, data, name, opts, out, wopts...)
			}
			t.Fatalf("unknown command %q", d.Cmd)
			return ""
		})
	})
}

// unescapeTest interprets \xHH, \uHHHH and \t; other backslashes stay.
func unescapeTest(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case 'x':
				v, err := strconv.ParseUint(s[i+2:i+4], 16, 8)
				if err == nil {
					b.WriteByte(byte(v))
					i += 3
					continue
				}
			case 'u':
				v, err := strconv.ParseUint(s[i+2:i+6], 16, 32)
				if err == nil {
					b.WriteRune(rune(v))
					i += 5
					continue
				}
			case 't':
				b.WriteByte('\t')
				i++
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
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
}
