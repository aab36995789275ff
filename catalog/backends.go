package catalog

import (
	"fmt"
	"slices"

	icecat "github.com/apache/iceberg-go/catalog"
)

// backendImports are the packages that register the catalog types a
// configuration file may name beyond sql, hadoop and rest (which this
// package compiles in itself: it opens REST catalogs with floe's HTTP
// transport, see rest.go). Importing package catalog forces neither Glue
// nor Hive on a program: the program imports those it needs, as cmd/floe
// does.
var backendImports = map[string]string{
	"rest": "github.com/apache/iceberg-go/catalog/rest",
	"glue": "github.com/apache/iceberg-go/catalog/glue",
	"hive": "github.com/apache/iceberg-go/catalog/hive",
}

// compiledIn reports, wrapping ErrUnsupported, a catalog type that is not
// registered with iceberg-go in this program, and how to get it.
func compiledIn(kind string) error {
	if slices.Contains(icecat.GetRegisteredCatalogs(), kind) {
		return nil
	}
	return fmt.Errorf("%w: catalog type %s is not compiled into this program: floe has it unless built with -tags floe_no_%s; a Go program gets it with import _ %q",
		ErrUnsupported, kind, kind, backendImports[kind])
}
