package write

import (
	"errors"
	"strings"

	"github.com/apache/iceberg-go/table"
)

// IsConflict reports whether err says that the table changed underneath a
// commit (another writer committed first), so that nothing was committed
// and the change may be recomputed and retried. iceberg-go reports this as
// table.ErrCommitFailed on REST catalogs but as a plain "requirement
// failed" error on the SQL and hadoop catalogs.
func IsConflict(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, table.ErrCommitFailed) {
		return true
	}
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "requirement failed") &&
		(strings.Contains(msg, "has changed") || strings.Contains(msg, "was created concurrently") || strings.Contains(msg, "is missing"))
}
