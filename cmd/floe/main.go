package main

import (
	_ "github.com/apache/arrow-go/v18/arrow/csv"
	_ "github.com/apache/arrow-go/v18/parquet/pqarrow"
	_ "github.com/apache/iceberg-go/catalog/glue"
	_ "github.com/apache/iceberg-go/catalog/hadoop"
	_ "github.com/apache/iceberg-go/catalog/hive"
	_ "github.com/apache/iceberg-go/catalog/rest"
	_ "github.com/apache/iceberg-go/catalog/sql"
	_ "github.com/apache/iceberg-go/io/gocloud"
	_ "github.com/apache/iceberg-go/table"
	_ "github.com/cockroachdb/datadriven"
	_ "github.com/spf13/cobra"
	_ "modernc.org/sqlite"
)

func main() {}
