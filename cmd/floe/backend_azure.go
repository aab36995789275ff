//go:build !floe_no_azure

package main

// Azure storage (abfs://, abfss://, wasb://, wasbs://), iceberg-go's IO.
import _ "github.com/apache/iceberg-go/io/gocloud/azure"
