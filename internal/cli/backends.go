package cli

import (
	"slices"

	icecat "github.com/apache/iceberg-go/catalog"
	iceio "github.com/apache/iceberg-go/io"
)

// compiledBackends lists the catalog types and storage schemes registered
// with iceberg-go in this program: what the program was assembled with
// (cmd/floe's backend files and build tags, or a Go program's imports).
func compiledBackends() (catalogs, schemes []string) {
	for _, c := range icecat.GetRegisteredCatalogs() {
		if c != "http" && c != "https" { // the REST catalog's aliases for a bare uri
			catalogs = append(catalogs, c)
		}
	}
	for _, s := range iceio.GetRegisteredSchemes() {
		if s != "" {
			schemes = append(schemes, s)
		}
	}
	slices.Sort(catalogs)
	slices.Sort(schemes)
	return catalogs, schemes
}
