package catalog

import (
	"fmt"
	"sort"
	"strings"

	"github.com/apache/iceberg-go/table"
)

// Resolve reads a table name the way Spark SQL does: a name of three or
// more parts whose first part is this catalog's name (case-insensitively)
// is catalog-qualified, and the catalog part is dropped (floe.shop.orders
// is shop.orders in the catalog floe). A first part naming another catalog
// of the configuration file is an ErrBadName error that says how to pick
// it; any other name is returned as it is (a.b.t is table t of the nested
// namespace a.b).
func (c *Catalog) Resolve(ident table.Identifier) (table.Identifier, error) {
	if len(ident) < 3 {
		return ident, nil
	}
	if strings.EqualFold(ident[0], c.name) {
		return ident[1:], nil
	}
	if c.configFile == "" {
		return ident, nil
	}
	cfg, err := LoadConfig(c.configFile)
	if err != nil {
		return ident, nil
	}
	var names []string
	other := false
	for n := range cfg.Catalogs {
		names = append(names, n)
		other = other || strings.EqualFold(n, ident[0])
	}
	if !other {
		return ident, nil
	}
	sort.Strings(names)
	return nil, fmt.Errorf("%w: %s names the catalog %q, but this command works on the catalog %q; pass --catalog %s to use that one (configured catalogs: %s)",
		ErrBadName, FormatName(ident), ident[0], c.name, ident[0], strings.Join(names, ", "))
}
