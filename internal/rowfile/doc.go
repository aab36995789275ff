// Package rowfile moves rows between user files and Arrow record batches:
// it reads CSV, JSON Lines and Parquet files into a table's Arrow schema
// (Open, NewReader) and writes batches as an aligned table, JSON Lines, a
// JSON array, CSV or Parquet (NewWriter). Both directions stream with
// bounded memory.
//
// # Reading
//
// The caller passes the target schema as iceberg-go's
// table.SchemaToArrowSchema(schema, nil, true, false) produces it, plus
// optional extra columns (a "_change_type", a sequence number). Output
// batches have exactly the target fields, then the extra fields, with their
// names, types, nullability and metadata (field IDs) unchanged.
//
// Input columns (CSV header names, JSON object keys, Parquet top-level
// fields, and likewise struct fields) match by exact name first, then by a
// unique case-insensitive name. A missing nullable column is NULL; a missing
// required column is ErrMissingColumn; an input column that matches nothing
// is ErrUnknownColumn unless ReadOptions.IgnoreUnknown.
//
// Values are converted to the column type and never rounded:
//
//   - int, long: exact integers; "1.0" and "1e3" are accepted because they
//     are integers, "1.5" is not; out-of-range values are errors.
//   - decimal(p,s): from the number's text, never through a float. More
//     significant fractional digits than s is an error; trailing zeros
//     beyond s are accepted ("1.500" into decimal(p,2) is 1.50).
//   - float, double: any decimal or exponent text, NaN, Infinity,
//     -Infinity (as JSON strings too).
//   - date: YYYY-MM-DD. time: hh:mm[:ss[.ffffff]]. timestamp and
//     timestamptz: an ISO-8601 date, optionally 'T' or ' ' and a time,
//     optionally a zone (Z, ±hh:mm, ±hhmm, ±hh). A date alone is midnight.
//     For timestamptz a value without zone is taken as UTC and one with a
//     zone is converted to UTC; for timestamp (no zone) a value with a zone
//     is an error. Fractional digits beyond the column's unit must be zeros.
//   - boolean: true/false in any case, and 1/0.
//   - binary, fixed[n]: standard base64 (padded or not); uuid and fixed[16]
//     also take a UUID (8-4-4-4-12 or 32 hex digits).
//   - list, struct, map: JSON arrays and objects; a map also takes an array
//     of {"key": k, "value": v} objects (needed for non-string keys). A CSV
//     cell or a Parquet string holding a nested value is parsed as JSON text.
//   - string: any valid UTF-8 text. In JSON only a JSON string fills a
//     string column (a number there is an error, not silently converted).
//
// Around values of other types than string, ASCII white space is ignored.
//
// CSV follows RFC 4180: a header row, commas, CRLF or LF line ends, quoted
// cells that may span lines (their line breaks are kept byte for byte), a
// UTF-8 byte order mark is skipped. An unquoted cell equal to
// ReadOptions.NullString (default: the empty string) is NULL; a quoted cell
// is never NULL, so "" is the empty string. Blank lines are skipped, except
// in a one-column file where a blank line is a NULL row.
//
// JSON Lines has one object per line; blank lines are skipped. A file whose
// first non-blank character is '[' is read as one JSON array of objects
// (what OutputJSON writes), one element at a time.
//
// Parquet is read in batches with pqarrow, only the matched columns. A
// column of the target type is passed on without copying; otherwise only
// widenings that hold for every value are accepted: int8/16/32 (and
// uint8/16, uint32 into long) to wider integers, float to double, decimal
// to a decimal with at least as many integer and fractional digits,
// timestamps between units when exact per value, a timestamp without zone
// into timestamptz (taken as UTC), string and large_string, binary and
// large_binary, date64 to date, time units when exact, fixed[16] and uuid.
// Strings are parsed like CSV cells into any other type. Anything else (long
// into int, double into long, a zoned timestamp into timestamp) is
// ErrIncompatibleType naming the column, reported by Open.
//
// One bad value fails the whole read with a *ValueError naming the file,
// the line (CSV: the physical line where the cell starts, the header being
// line 1; JSON: the line of the value) or the 0-based row index (Parquet),
// the column (with a path into nested values), the value and the type:
//
//	changes.csv:12: column "price": cannot convert "abc" to decimal(10,2): not a decimal number
//
// Malformed input fails with ErrMalformed and the file and line (or the
// Parquet rows being read).
//
// # Writing
//
// Text forms are a stable contract: timestamptz as ISO-8601 UTC with Z
// (2024-01-02T03:04:05.123456Z, trailing fractional zeros trimmed as
// RFC3339Nano does), timestamp the same without Z, date 2024-01-02, years
// outside 0000..9999 in ISO 8601's expanded form with a sign as java.time
// writes them (+10000-01-01, -0001-12-31; year 0 is 1 BC), which the
// readers accept, so every value of every type reads back as written, time
// 03:04:05.123456, decimals as text keeping their scale ("12.30"), binary
// and fixed as standard base64, uuid canonical lower case, integers as
// numbers, floats in the shortest form that reads back exactly with NaN,
// Infinity and -Infinity as strings, lists as arrays, structs as objects,
// maps as objects when keys are strings and as arrays of {"key","value"}
// objects otherwise, NULL as null. JSON Lines and JSON write object keys in
// column order. CSV uses the same text (nested values as JSON text), an
// empty unquoted cell for NULL and "" for the empty string. Parquet is
// written with pqarrow, zstd, the Arrow schema stored and field IDs kept.
// The table format is for people; its layout is not a contract.
package rowfile
