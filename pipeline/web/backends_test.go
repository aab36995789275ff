package web_test

// The status page tests open a REST catalog; package catalog leaves
// registering it to the program (cmd/floe), and so to this test.
import _ "github.com/apache/iceberg-go/catalog/rest"
