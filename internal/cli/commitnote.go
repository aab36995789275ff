package cli

import (
	"fmt"

	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/internal/commit"
)

// answerLost warns, also under --quiet, that the catalog's answer to a
// commit was lost and floe found the commit on the table.
func (a *app) answerLost(lost bool, ident table.Identifier, commitID string) {
	if !lost {
		return
	}
	fmt.Fprintf(a.stderr, "floe: warning: the catalog's answer to the commit on %s was lost; floe reloaded the table and found the commit (%s=%s): it landed once\n",
		catalog.FormatName(ident), commit.PropCommitID, commitID)
}
