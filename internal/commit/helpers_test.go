package commit_test

import (
	"testing"

	"github.com/floedata/floe/internal/tabletest"
	"github.com/floedata/floe/tableops"
)

// appendRows appends rows with the given ids to ns.<name> (a table whose
// only column is id).
func appendRows(t testing.TB, e *tabletest.Env, name string, ids ...int64) {
	t.Helper()
	data := make([][]any, len(ids))
	for i, id := range ids {
		data[i] = []any{id}
	}
	as := tabletest.ArrowSchema(e.Load(name))
	if _, err := tableops.Append(e.Ctx, e.Target(name, ""), tabletest.Seq(as, data)); err != nil {
		t.Fatal(err)
	}
}
