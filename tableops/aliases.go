package tableops

import (
	"github.com/floedata/floe/internal/commit"
	"github.com/floedata/floe/internal/ddl"
	"github.com/floedata/floe/internal/write"
)

// CommitOutcome is what the commit of a table operation did (AlterTable): whether
// it committed, the snapshot, the attempts, a lost answer found.
type CommitOutcome = commit.Outcome

// WriteResult is the change a commit wrote (CommitOutcome.Result).
type WriteResult = write.Result

// Column is a column to add (Alter.AddColumns), as floe's DDL reads one.
type Column = ddl.Column
