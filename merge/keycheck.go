package merge

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// ErrKeyNotIdentifier is wrapped when Apply is asked to apply changes by a
// key that is not the table's identifier: upserting by another column can
// give several rows one identifier value. WithNonIdentifierKey allows it.
var ErrKeyNotIdentifier = errors.New("key is not the table's identifier")

// WithNonIdentifierKey lets Apply use key columns other than the table's
// identifier fields. The key is still unique in what Apply writes (one
// action per key), but nothing checks that the table's identifier stays
// unique. A table without identifier fields (as Spark creates them) takes
// any key without it: it has no identifier values to duplicate.
func WithNonIdentifierKey() Option { return func(o *Options) { o.NonIdentifierKey = true } }

// IdentifierNames returns the names of the table's identifier fields, in
// schema order.
func IdentifierNames(tbl *table.Table) []string {
	sc := tbl.Schema()
	var names []string
	for _, id := range sc.IdentifierFieldIDs {
		if n, ok := sc.FindColumnName(id); ok {
			names = append(names, n)
		}
	}
	return names
}

// SameColumns reports whether a and b name the same set of columns.
func SameColumns(a, b []string) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(slices.Compact(x), slices.Compact(y))
}

// checkKeyIdentifier refuses keys (as the table names them) that are not
// the table's identifier fields, unless o allows it.
func checkKeyIdentifier(tbl *table.Table, keys []string, o *Options) error {
	if o.NonIdentifierKey {
		return nil
	}
	ids := IdentifierNames(tbl)
	if len(ids) == 0 || SameColumns(keys, ids) {
		return nil
	}
	return fmt.Errorf("%w: key %s is not the identifier (%s) of the table: applying by it can give several rows one identifier value; apply by %s, or allow it explicitly (--allow-non-identifier-key)",
		ErrKeyNotIdentifier, strings.Join(keys, ", "), strings.Join(ids, ", "), strings.Join(ids, ", "))
}

// KeyFilter is a conservative Iceberg filter matching the key values of
// every row of recs (keyCols, named as the table names them keyNames): for
// pruning the files a scan for those keys reads.
func KeyFilter(sc *iceberg.Schema, recs []arrow.RecordBatch, keyCols []int, keyNames []string) iceberg.BooleanExpression {
	return keyFilter(sc, recs, keyCols, keyNames, func(yield func(b, i int) bool) {
		for b, r := range recs {
			for i := range int(r.NumRows()) {
				if !yield(b, i) {
					return
				}
			}
		}
	})
}
