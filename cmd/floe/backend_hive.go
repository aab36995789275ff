//go:build !floe_no_hive

package main

// Hive Metastore catalogs (type: hive).
import _ "github.com/apache/iceberg-go/catalog/hive"
