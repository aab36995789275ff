//go:build !floe_no_rest

package main

// REST catalogs (type: rest, or a uri of http:// or https://).
import _ "github.com/apache/iceberg-go/catalog/rest"
