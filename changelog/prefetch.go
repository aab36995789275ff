package changelog

import (
	"context"
	"iter"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/floedata/floe/internal/safe"
)

// prefetchBatches is how many batches a prefetched stream reads ahead.
const prefetchBatches = 2

// prefetch runs seq in its own goroutine, up to prefetchBatches batches
// ahead of the consumer, so that two streams consumed side by side (the
// old and the new files of a rewrite) are decoded in parallel while the
// consumer still takes their batches in a fixed order. When the consumer
// stops early, the goroutine stops after the batch it is reading and the
// batches read ahead are released.
func prefetch(ctx context.Context, seq iter.Seq2[arrow.RecordBatch, error]) iter.Seq2[arrow.RecordBatch, error] {
	type item struct {
		rec arrow.RecordBatch
		err error
	}
	return func(yield func(arrow.RecordBatch, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		ch := make(chan item, prefetchBatches)
		go func() {
			defer close(ch)
			defer safe.Recover(func(err error) { safe.Send(ctx, ch, item{err: err}) })
			for rec, err := range seq {
				if ctx.Err() != nil {
					// The consumer has stopped (and drains the channel,
					// so the send below could still go through).
					if rec != nil {
						rec.Release()
					}
					return
				}
				select {
				case ch <- item{rec, err}:
				case <-ctx.Done():
					if rec != nil {
						rec.Release()
					}
					return
				}
				if err != nil {
					return
				}
			}
		}()
		defer func() {
			cancel()
			for it := range ch {
				if it.rec != nil {
					it.rec.Release()
				}
			}
		}()
		for it := range ch {
			if !yield(it.rec, it.err) || it.err != nil {
				return
			}
		}
	}
}
