package rowfile

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Format is an input file format.
type Format int

const (
	// FormatAuto takes the format from the file name's extension.
	FormatAuto Format = iota
	// FormatCSV is comma-separated values with a header row (RFC 4180).
	FormatCSV
	// FormatJSONL is JSON Lines: one JSON object per line. A file whose first
	// non-blank character is '[' is read as one JSON array of objects instead
	// (what OutputJSON writes).
	FormatJSONL
	// FormatParquet is Apache Parquet.
	FormatParquet
)

// String returns the format's canonical name ("auto", "csv", "jsonl",
// "parquet").
func (f Format) String() string {
	switch f {
	case FormatAuto:
		return "auto"
	case FormatCSV:
		return "csv"
	case FormatJSONL:
		return "jsonl"
	case FormatParquet:
		return "parquet"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// ParseFormat parses an input format name: "csv", "jsonl" (also "ndjson" and
// "json"), "parquet" (also "parq"), or "auto"/"" for FormatAuto. Names are
// case-insensitive. An unknown name is an error wrapping ErrFormat.
func ParseFormat(s string) (Format, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
		return FormatAuto, nil
	case "csv":
		return FormatCSV, nil
	case "jsonl", "ndjson", "json":
		return FormatJSONL, nil
	case "parquet", "parq":
		return FormatParquet, nil
	}
	return FormatAuto, fmt.Errorf("%w: input format %q (want csv, jsonl, json or parquet)", ErrFormat, s)
}

// FormatFromPath returns the format for a file name's extension: .csv,
// .jsonl/.ndjson/.json, .parquet/.parq (case-insensitive). Other extensions
// are an error wrapping ErrFormat.
func FormatFromPath(path string) (Format, error) {
	ext := strings.ToLower(filepath.Ext(path))
	switch ext {
	case ".csv":
		return FormatCSV, nil
	case ".jsonl", ".ndjson", ".json":
		return FormatJSONL, nil
	case ".parquet", ".parq":
		return FormatParquet, nil
	}
	return FormatAuto, fmt.Errorf("%w: cannot tell the format of %q from its extension %q; "+
		"use .csv, .jsonl, .ndjson, .json, .parquet or .parq, or name the format", ErrFormat, path, ext)
}

// OutputFormat is a format for printing or saving rows.
type OutputFormat int

const (
	// OutputTable is aligned columns for people: a header, NULL shown as
	// NULL, long cells cut with an ellipsis.
	OutputTable OutputFormat = iota
	// OutputJSONL is one JSON object per row and line, keys in column order.
	OutputJSONL
	// OutputJSON is one JSON array of objects.
	OutputJSON
	// OutputCSV is RFC 4180 CSV with a header row.
	OutputCSV
	// OutputParquet is a Parquet file compressed with zstd.
	OutputParquet
)

// String returns the format's name as ParseOutputFormat accepts it.
func (f OutputFormat) String() string {
	switch f {
	case OutputTable:
		return "table"
	case OutputJSONL:
		return "jsonl"
	case OutputJSON:
		return "json"
	case OutputCSV:
		return "csv"
	case OutputParquet:
		return "parquet"
	}
	return fmt.Sprintf("OutputFormat(%d)", int(f))
}

// ParseOutputFormat parses "table", "jsonl" (also "ndjson"), "json", "csv"
// or "parquet", case-insensitively. An unknown name is an error wrapping
// ErrFormat.
func ParseOutputFormat(s string) (OutputFormat, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "table":
		return OutputTable, nil
	case "jsonl", "ndjson":
		return OutputJSONL, nil
	case "json":
		return OutputJSON, nil
	case "csv":
		return OutputCSV, nil
	case "parquet":
		return OutputParquet, nil
	}
	return OutputTable, fmt.Errorf("%w: output format %q (want table, jsonl, json, csv or parquet)", ErrFormat, s)
}
