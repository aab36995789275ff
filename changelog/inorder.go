package changelog

import (
	"context"
	"iter"
	"runtime"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/floedata/floe/internal/rows"
	"github.com/floedata/floe/internal/safe"
)

// processWorkers is how many partitions processInOrder works on at once
// (0: GOMAXPROCS). Tests set it to compare one worker with several.
var processWorkers = 0

// processInOrder runs fn on each partition of parts, up to processWorkers
// partitions at once, and hands fn's results (nil: nothing) to out in
// partition order, on the caller's goroutine, as each is ready: the
// results, and so the changelog, are those of running fn on the
// partitions one after the other, and out (the output's encoding, say)
// runs while later partitions are processed. fn takes the records it is
// given (it may not keep them past its return: processInOrder releases
// them); out takes each result.
//
// Memory: with budget > 0 (the partitions of a partitioner that spilled,
// read back from disk one at a time, each at most budget), another
// partition is started only while the partitions in flight, with the
// largest one seen so far, stay within budget, so the rows held are about
// what one partition at a time held, with one partition more only when a
// later partition is larger than every earlier one. budget 0 puts no
// bound: the partitions of a partitioner that did not spill are in memory
// already (and their sizes, slices of shared buffers, would be
// overcounted).
//
// The first error in partition order (of parts, fn or out) is returned,
// as the one-by-one loop would; the partitions in flight are then waited
// for and their results released, so no goroutine outlives the call.
func processInOrder(ctx context.Context, parts iter.Seq2[[]arrow.RecordBatch, error], budget int64,
	fn func(context.Context, []arrow.RecordBatch) (arrow.RecordBatch, error), out func(arrow.RecordBatch) error) error {
	workers := processWorkers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type job struct {
		done chan struct{}
		res  arrow.RecordBatch
		err  error
		size int64
	}
	var queue []*job
	// drain waits for the jobs in flight and releases their results (after
	// an error or a stop).
	drain := func() {
		cancel()
		for _, j := range queue {
			<-j.done
			if j.res != nil {
				j.res.Release()
			}
		}
		queue = nil
	}
	next, stop := iter.Pull2(parts)
	defer stop()
	var held, largest int64
	exhausted := false
	var readErr error
	for {
		for !exhausted && (len(queue) == 0 || (len(queue) < workers && (budget <= 0 || held+largest <= budget))) {
			recs, err, ok := next()
			if !ok {
				exhausted = true
				break
			}
			if err != nil {
				// The partitions before it go out first, as in the loop.
				readErr, exhausted = err, true
				break
			}
			j := &job{done: make(chan struct{})}
			if budget > 0 {
				for _, r := range recs {
					j.size += rows.RecordSize(r)
				}
			}
			held += j.size
			largest = max(largest, j.size)
			queue = append(queue, j)
			go func() {
				defer close(j.done)
				defer safe.Recover(func(err error) { j.err = err })
				defer func() {
					for _, r := range recs {
						r.Release()
					}
				}()
				if err := ctx.Err(); err != nil {
					j.err = err
					return
				}
				j.res, j.err = fn(ctx, recs)
				if j.err != nil && j.res != nil {
					j.res.Release()
					j.res = nil
				}
			}()
		}
		if len(queue) == 0 {
			return readErr
		}
		j := queue[0]
		<-j.done
		queue = queue[1:]
		held -= j.size
		if j.err != nil {
			drain()
			return j.err
		}
		if j.res == nil {
			continue
		}
		if err := out(j.res); err != nil {
			drain()
			return err
		}
	}
}
