package commit

import (
	"context"
	"errors"
	"strings"

	icecat "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// Class is what an error of a catalog's commit call says about the commit.
type Class int

const (
	// Unknown: no usable answer (5xx, a reset or closed connection, a
	// timeout, a cancelled context, any error the class does not know):
	// the catalog may have committed.
	Unknown Class = iota
	// Conflict: the catalog answered that the table changed underneath
	// the commit; nothing was committed, and the change may be recomputed
	// on the new table state and retried.
	Conflict
	// Refused: the catalog answered no for another reason (a bad request,
	// no permission, the table is gone); nothing was committed, and
	// retrying would not help.
	Refused
)

func (c Class) String() string {
	switch c {
	case Conflict:
		return "conflict"
	case Refused:
		return "refused"
	}
	return "unknown"
}

// Classify says what err, returned by a commit call to a catalog of the
// given kind (catalog.Catalog.Kind), means for the commit. Errors are
// recognised by identity (iceberg-go's sentinels); where a catalog has
// none, its adapter below says what it reports instead.
func Classify(kind string, err error) Class {
	if err == nil {
		return Unknown
	}
	// A context that ended during the call leaves the outcome open,
	// whatever the error around it.
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return Unknown
	}
	if errors.Is(err, table.ErrCommitFailed) {
		return Conflict
	}
	if a, ok := adapters[kind]; ok {
		return a(err)
	}
	return Unknown
}

// adapters classify, per catalog kind, what iceberg-go's client for that
// catalog reports without a sentinel. Each is tested in classify_test.go.
var adapters = map[string]func(error) Class{
	"embedded": metadataCatalog,
	"sql":      metadataCatalog,
	"hadoop":   metadataCatalog,
	"glue":     metadataCatalog,
	"hive":     metadataCatalog,
	"rest":     restCatalog,
}

// metadataCatalog covers the catalogs where iceberg-go itself checks the
// commit's requirements before writing anything (catalog/internal's
// UpdateAndStageTable for sql, glue and hive; hadoop's own loop): a
// requirement that does not hold is a plain error "requirement failed:
// branch main has changed: ..." (or "Requirement failed: ..."), with no
// sentinel; nothing was written. A table that appeared first fails a
// creating commit with ErrTableAlreadyExists.
func metadataCatalog(err error) Class {
	switch {
	case strings.Contains(strings.ToLower(err.Error()), "requirement failed"),
		errors.Is(err, icecat.ErrTableAlreadyExists):
		return Conflict
	case errors.Is(err, icecat.ErrNoSuchTable), errors.Is(err, icecat.ErrNoSuchNamespace):
		return Refused
	}
	return Unknown
}

// restCatalog covers iceberg-go's REST client: 409 is rest.ErrCommitFailed
// (a table.ErrCommitFailed, handled above), 500, 502, 503 and 504 are
// rest.ErrCommitStateUnknown, the other 4xx answers are the server's
// definite no. Network errors have no sentinel and stay Unknown.
func restCatalog(err error) Class {
	switch {
	case isREST(err, restCommitStateUnknown, restServerError, restServiceUnavailable):
		return Unknown
	case isREST(err, restBadRequest, restForbidden, restUnauthorized, restAuthorizationExpired),
		errors.Is(err, icecat.ErrNoSuchTable), errors.Is(err, icecat.ErrNoSuchNamespace):
		return Refused
	}
	return Unknown
}
