//go:build !cgo

// Package duckdb is floe's SQL engine, DuckDB, which needs cgo: this build
// has no cgo, so it registers nothing and SQL transforms fail with
// sqltx.ErrNoEngine ("SQL transforms need floe built with cgo (DuckDB)").
package duckdb
