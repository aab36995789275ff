// Package pipeline runs incremental transforms as pipelines: named steps
// in dependency order (a step whose source is another's destination runs
// after it), once or on a schedule, with their state, history and metrics.
//
// # Pipeline files
//
// A YAML file (File, declared once in config.go; Reference renders its
// documentation) lists transforms of four types: sync (Sync, the seeds'
// CDC by key with a filter and a projection), filter (Filter, append-only),
// merge (Merge: the changelog into a MERGE INTO run by package merge) and
// delta (a Delta Lake sync run by package deltasync). Parse reports every
// problem of a file at once, by file, line, transform and field
// (ValidationError).
// Transforms written in Go become a pipeline with FromTransforms.
//
// # Running
//
// Runner.RunOnce runs steps one at a time in dependency order; a step
// downstream of a failed one is not run (OutcomeBlocked). Scheduler runs
// them repeatedly, each on its interval with jitter, never two runs of one
// step at once, a dependant after its source; cancelling its context stops
// it after the runs in progress have stopped before committing (or
// finished their commit). Each build commits each output once with its
// watermarks (package transform and package commit), so a run stopped or
// killed at any point leaves every output either as it was or fully
// built, and the next run continues from the watermarks.
//
// # Status and metrics
//
// Runner.Status reads, per output, the last build, the watermarks and how
// many snapshots each input has after them, with the run history kept by
// History in a small JSON file. Metrics are Prometheus collectors built
// from an injected Registerer.
//
// # Concurrency
//
// A Pipeline and its Steps are read-only once built. Runner, History and
// Metrics are safe for concurrent use by the runs of different steps.
package pipeline
