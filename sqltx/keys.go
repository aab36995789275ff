package sqltx

import (
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/internal/scan"
	"github.com/floedata/floe/internal/transform"
	"github.com/floedata/floe/merge"
)

// existingKeys returns one key of recs (columns = keys) that the table tbl
// already holds ("" when none), scanning only the files that may hold
// them; the comparison runs in the session, so that types of the result
// and of the table need not be identical.
func existingKeys(ctx *transform.Context, sess Session, tbl *table.Table, sch *arrow.Schema, recs []arrow.RecordBatch, keys []string) (string, error) {
	all := make([]int, len(keys))
	for i := range all {
		all[i] = i
	}
	opts := scan.Options{Columns: keys, Filter: merge.KeyFilter(tbl.Schema(), recs, all, keys)}
	dsch, seq, err := scan.Rows(ctx, tbl, opts)
	if err != nil {
		return "", err
	}
	if err := sess.Bind(ctx, "", "__floe_new_keys", transform.NewRows(sch, func(yield func(arrow.RecordBatch, error) bool) {
		for _, rec := range recs {
			rec.Retain()
			if !yield(rec, nil) {
				return
			}
		}
	})); err != nil {
		return "", err
	}
	if err := sess.Bind(ctx, "", "__floe_held_keys", transform.NewRows(dsch, seq)); err != nil {
		return "", err
	}
	match := make([]string, len(keys))
	for i, k := range keys {
		match[i] = fmt.Sprintf("n.%s = h.%s", quoteIdent(k), quoteIdent(k))
	}
	rows, err := sess.Strings(ctx, fmt.Sprintf("SELECT %s FROM __floe_new_keys n JOIN __floe_held_keys h ON %s LIMIT 1",
		concatKey("n.", keys), strings.Join(match, " AND ")))
	if err != nil {
		return "", err
	}
	if len(rows) == 0 {
		return "", nil
	}
	return rows[0][0], nil
}
