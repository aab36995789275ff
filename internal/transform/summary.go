package transform

import (
	"strconv"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/floedata/floe/internal/state"
)

// Snapshot summary keys of the snapshots a build commits: for each input,
// the input snapshot the output reflects, so that the output's freshness
// over time can be rebuilt from the tables alone (by floe, or by any engine
// reading the output's snapshots). <input> is the input's declared name.
//
//	floe.source.<input>.table         the input table ("ns.t")
//	floe.source.<input>.snapshot-id   the input's snapshot the build read up to (NONE: the input was empty)
//	floe.source.<input>.committed-at  that snapshot's commit time, ISO-8601 UTC with milliseconds
//
// For a Delta input (WithDeltaInput) .table is "delta:<location>" and
// .snapshot-id the Delta version read up to.
const (
	SummarySourcePrefix      = "floe.source."
	SummarySourceTable       = ".table"
	SummarySourceSnapshotID  = ".snapshot-id"
	SummarySourceCommittedAt = ".committed-at"
)

// SummaryTimeLayout is the layout of floe.source.<input>.committed-at.
const SummaryTimeLayout = "2006-01-02T15:04:05.000Z07:00"

// SourceSummaryKey is the summary key of field (one of the
// SummarySource* suffixes) of input.
func SourceSummaryKey(input, field string) string { return SummarySourcePrefix + input + field }

// summary is the snapshot summary of an output's commit: the transform's
// name, the input snapshots the build read, and extra.
func (o *Output) summary(extra map[string]string) iceberg.Properties {
	p := iceberg.Properties{state.PropTransform: o.b.t.Name}
	for _, in := range o.b.next.Inputs {
		p[SourceSummaryKey(in.Name, SummarySourceTable)] = in.Table
		p[SourceSummaryKey(in.Name, SummarySourceSnapshotID)] = in.Snapshot
		if i := o.b.inputs[in.Name]; i != nil && i.head != nil {
			p[SourceSummaryKey(in.Name, SummarySourceCommittedAt)] = time.UnixMilli(i.head.TimestampMs).UTC().Format(SummaryTimeLayout)
		} else if i != nil && i.delta != nil && !i.delta.committed.IsZero() {
			p[SourceSummaryKey(in.Name, SummarySourceCommittedAt)] = i.delta.committed.UTC().Format(SummaryTimeLayout)
		}
	}
	for k, v := range o.b.engine.Summary() {
		p[k] = v
	}
	for k, v := range o.b.extra {
		p[k] = v
	}
	for k, v := range extra {
		p[k] = v
	}
	return p
}

// ParseSummaryTime parses a floe.source.<input>.committed-at value (also
// epoch milliseconds).
func ParseSummaryTime(s string) (time.Time, bool) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), true
	}
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.UnixMilli(ms).UTC(), true
	}
	return time.Time{}, false
}
