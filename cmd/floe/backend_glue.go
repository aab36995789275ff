//go:build !floe_no_glue

package main

// AWS Glue Data Catalog catalogs (type: glue).
import _ "github.com/apache/iceberg-go/catalog/glue"
