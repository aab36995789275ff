package write

import (
	"context"
	"fmt"
	"strconv"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floedata/floe/internal/scan"
)

// Snapshot summary properties of a change written in auto mode: the mode
// chosen, the fraction it was chosen from and the threshold, and how many
// data files were rewritten or given delete files.
const (
	SummaryWriteMode     = "floe.write.mode"
	SummaryAutoChoice    = "floe.write.auto.choice"
	SummaryTouchedRatio  = "floe.write.auto.touched-ratio"
	SummaryRewriteRatio  = "floe.write.auto.rewrite-ratio"
	SummaryRewritten     = "floe.write.rewritten-files"
	SummaryDeleteTargets = "floe.write.delete-files"
)

// autoState is auto's decision for one Prepare.
type autoState struct {
	ratio   float64 // the threshold
	touched float64 // the fraction of the touched files' live rows touched
}

// autoFor reads auto's threshold: req.RewriteRatio when set, else the
// table's floe.write.auto.rewrite-ratio, else DefaultRewriteRatio.
func autoFor(tbl *table.Table, req Request) (*autoState, error) {
	if req.RewriteRatio > 0 {
		if req.RewriteRatio > 1 {
			return nil, fmt.Errorf("rewrite ratio %g: want a fraction from 0 to 1", req.RewriteRatio)
		}
		return &autoState{ratio: req.RewriteRatio}, nil
	}
	r, err := RewriteRatioFor(tbl.Properties())
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", scan.FormatIdent(tbl.Identifier()), err)
	}
	return &autoState{ratio: r}, nil
}

// chooseMode sets res.Mode from the touched and live rows of every
// candidate file. A file whose work an earlier attempt did (in either
// mode, with the same delete files) gives its figures from that work;
// the others are matched now, and returned (matched[i]) for the rewrite
// pass of this attempt: the visitor's match and rewrite of a file run in
// one attempt, or neither does. A v1 table is always rewritten: it cannot
// hold delete files.
func (res *Result) chooseMode(ctx context.Context, reader *scan.Reader, tasks []scan.Task, req Request) ([]*fileWork, error) {
	matched := make([]*fileWork, len(tasks))
	seen := make([]*fileWork, len(tasks))
	err := res.eachTask(ctx, reader, tasks, func(ctx context.Context, i int, t scan.Task) ([]string, error) {
		for _, m := range []Mode{CopyOnWrite, MergeOnRead} {
			if fw := req.Reuse.get(workKey(t, m, true)); fw != nil {
				seen[i] = fw
				return nil, nil
			}
		}
		touched, live, err := matchFile(ctx, reader, t, req.Visitor, nil) // every row: auto weighs the touched fraction of the live rows
		if err != nil {
			return nil, err
		}
		matched[i] = &fileWork{touched: touched, live: live}
		seen[i] = matched[i]
		return nil, nil
	})
	if err != nil {
		return nil, err
	}
	files := make([]FileTouch, 0, len(seen))
	for _, fw := range seen {
		if fw.touched != nil {
			files = append(files, FileTouch{Touched: int64(fw.touched.GetCardinality()), Live: fw.live})
		}
	}
	res.Mode, res.auto.touched = Choose(files, res.auto.ratio)
	if res.Table.Metadata().Version() < 2 {
		res.Mode = CopyOnWrite
	}
	return matched, nil
}

// recordChoice puts auto's decision into the snapshot summary.
func (res *Result) recordChoice() {
	rewritten, deleted := 0, 0
	if res.Mode == CopyOnWrite {
		rewritten = len(res.Touched)
	} else {
		deleted = len(res.Touched)
	}
	res.Summary = iceberg.Properties{
		SummaryWriteMode:     Auto.String(),
		SummaryAutoChoice:    res.Mode.String(),
		SummaryTouchedRatio:  strconv.FormatFloat(res.auto.touched, 'f', 4, 64),
		SummaryRewriteRatio:  strconv.FormatFloat(res.auto.ratio, 'f', -1, 64),
		SummaryRewritten:     strconv.Itoa(rewritten),
		SummaryDeleteTargets: strconv.Itoa(deleted),
	}
}
