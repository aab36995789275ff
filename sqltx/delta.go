package sqltx

import (
	"errors"
	"fmt"
	"strings"

	"github.com/floedata/floe/changelog"
	"github.com/floedata/floe/delta"
)

// deltaCDF is a Delta input's Change Data Feed since the last build, bound
// in the session.
type deltaCDF struct {
	view string   // the bound rows (Delta's columns and _change_type, _commit_version, _commit_timestamp)
	data []string // the quoted table columns
}

// Delta's change data columns and change types.
const (
	deltaChangeType      = "_change_type"
	deltaCommitVersion   = "_commit_version"
	deltaCommitTimestamp = "_commit_timestamp"
	deltaInserted        = "('insert', 'update_postimage')"
	deltaDeleted         = "('delete', 'update_preimage')"
)

// readDeltaChanges reads, before any other input, the Change Data Feed of
// every Delta input of an incremental build between its watermark and the
// version the build pinned. When the feed does not cover the range (not
// enabled, the log or the change files cleaned up, a schema change it
// cannot be read across) the build becomes a full rebuild with the reason;
// so does a no-key (append) build whose range deletes or updates rows.
func (r *run) readDeltaChanges(rule string) error {
	if !r.ctx.IsIncremental() {
		return nil
	}
	for i, t := range r.plan.Tables {
		in := r.ctx.Input(t)
		if !in.IsDelta() {
			continue
		}
		rows, err := in.DeltaChanges()
		view := fmt.Sprintf("__floe_cdf_%d", i)
		if err == nil {
			err = r.s.Bind(r.ctx, "", view, rows)
		}
		if err != nil {
			if !cdfUnreadable(err) {
				return fmt.Errorf("input %s: %w", t, err)
			}
			reason := fmt.Sprintf("the Change Data Feed of input %s from version %d to %d cannot be read (%v)", t, *in.Start()+1, in.DeltaVersion(), err)
			r.rebuild(reason)
			return nil
		}
		sch, seq, err := r.s.Query(r.ctx, fmt.Sprintf("SELECT * FROM %s LIMIT 0", view))
		if err != nil {
			return err
		}
		for rec, err := range seq {
			if err != nil {
				return err
			}
			rec.Release()
		}
		var data []string
		for _, f := range sch.Fields() {
			switch f.Name {
			case deltaChangeType, deltaCommitVersion, deltaCommitTimestamp:
				continue
			}
			data = append(data, quoteIdent(f.Name))
		}
		if r.cdf == nil {
			r.cdf = map[string]deltaCDF{}
		}
		r.cdf[t] = deltaCDF{view: view, data: data}
		if rule == RuleRowLocalAppend {
			n, err := r.s.Strings(r.ctx, fmt.Sprintf("SELECT count(*) FROM %s WHERE %s NOT IN %s", view, deltaChangeType, deltaInserted))
			if err != nil {
				return err
			}
			if len(n) == 1 && n[0][0] != "0" {
				r.rebuild(fmt.Sprintf("input %s has deleted or updated rows from version %d to %d; a query without key appends, and rebuilds on deletes and updates",
					t, *in.Start()+1, in.DeltaVersion()))
				return nil
			}
		}
	}
	return nil
}

// rebuild turns the build into a full rebuild for reason, recorded as the
// other reasons of the sql rules are.
func (r *run) rebuild(reason string) {
	r.ctx.SetSummary(SummaryRebuildReason, reason)
	r.ctx.Rebuild("sql: " + reason)
	r.ctx.Logger().Info("sql transform rebuilt in full", "reason", reason)
	r.cdf = nil
}

// cdfUnreadable reports whether err says a Delta table's change data for a
// range is not there to read (rather than a failure to read it).
func cdfUnreadable(err error) bool {
	for _, e := range []error{delta.ErrChangeDataNotRecorded, delta.ErrVersionNotFound, delta.ErrIncompatibleSchemaChange, delta.ErrFileNotFound} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// bindDeltaNetChanges binds the net changes of Delta input t (read by
// readDeltaChanges) as name, in the form of an Iceberg input's: whole-row
// inserts and deletes (_change_type INSERT or DELETE), the images that a
// range both deleted and inserted cancelled out, since the state at the
// end is the state at the start plus the inserted images minus the
// deleted ones (as multisets). It returns the quoted data columns.
func (r *run) bindDeltaNetChanges(t, name string) ([]string, error) {
	c := r.cdf[t]
	cols := strings.Join(c.data, ", ")
	q := fmt.Sprintf(`CREATE OR REPLACE VIEW %[1]s AS
SELECT *, '%[4]s' AS %[6]s FROM (SELECT %[2]s FROM %[3]s WHERE %[7]s IN %[8]s EXCEPT ALL SELECT %[2]s FROM %[3]s WHERE %[7]s IN %[9]s)
UNION ALL
SELECT *, '%[5]s' AS %[6]s FROM (SELECT %[2]s FROM %[3]s WHERE %[7]s IN %[9]s EXCEPT ALL SELECT %[2]s FROM %[3]s WHERE %[7]s IN %[8]s)`,
		quoteIdent(name), cols, c.view, changelog.Insert, changelog.Delete, changelog.ChangeTypeColumn, deltaChangeType, deltaInserted, deltaDeleted)
	if err := r.s.Exec(r.ctx, q); err != nil {
		return nil, fmt.Errorf("input %s: %w", t, err)
	}
	return c.data, nil
}

// bindAdded binds the rows appended to table t since the last build under
// its name (the whole table on a full build).
func (r *run) bindAdded(t string) error {
	c, ok := r.cdf[t]
	if !ok {
		rows, err := r.ctx.Input(t).Added()
		if err != nil {
			return err
		}
		if err := r.bind(t, rows); err != nil {
			return fmt.Errorf("input %s: %w", t, err)
		}
		return nil
	}
	ns, name, err := splitName(t)
	if err != nil {
		return err
	}
	return r.s.Exec(r.ctx, fmt.Sprintf("CREATE SCHEMA IF NOT EXISTS %s; CREATE OR REPLACE VIEW %s.%s AS SELECT %s FROM %s WHERE %s IN %s",
		quoteIdent(ns), quoteIdent(ns), quoteIdent(name), strings.Join(c.data, ", "), c.view, deltaChangeType, deltaInserted))
}
