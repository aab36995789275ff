package catalog

import (
	"errors"

	icecat "github.com/apache/iceberg-go/catalog"
)

// Sentinel errors returned (wrapped) by this package. Callers use errors.Is.
var (
	// ErrNoSuchTable is returned when a table is not in the catalog. It wraps
	// iceberg-go's catalog.ErrNoSuchTable.
	ErrNoSuchTable = icecat.ErrNoSuchTable
	// ErrNoSuchNamespace is returned when a namespace is not in the catalog.
	ErrNoSuchNamespace = icecat.ErrNoSuchNamespace
	// ErrBadName is returned for a table or namespace name that cannot be parsed.
	ErrBadName = errors.New("invalid name")
	// ErrConfig is returned for a catalog configuration that cannot be used:
	// an unknown catalog name, a missing file, a malformed YAML document.
	ErrConfig = errors.New("catalog configuration")
	// ErrUnsupported is returned for an operation the chosen catalog cannot do.
	ErrUnsupported = errors.New("not supported by this catalog")
)

// ErrTableExists is returned (wrapped) when creating a table that exists.
var ErrTableExists = icecat.ErrTableAlreadyExists
