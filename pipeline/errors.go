package pipeline

import "errors"

// Sentinel errors. Errors returned by this package wrap them with %w and
// name the file, line, transform and field concerned; test with errors.Is.
var (
	// ErrInvalidPipeline is wrapped by every error about a pipeline file or
	// a set of transforms: unknown or missing fields, bad values, duplicate
	// names or destinations, dependency cycles.
	ErrInvalidPipeline = errors.New("invalid pipeline")
	// ErrCycle is wrapped (together with ErrInvalidPipeline) when
	// transforms depend on each other in a cycle; the message names it.
	ErrCycle = errors.New("dependency cycle")
	// ErrUnknownTransform is wrapped when a transform is selected by a
	// name the pipeline does not have.
	ErrUnknownTransform = errors.New("unknown transform")
	// ErrUpstreamFailed is wrapped in the outcome of a transform that was
	// not run because a transform it depends on failed.
	ErrUpstreamFailed = errors.New("an upstream transform failed")
	// ErrRunFailed is wrapped by RunOnce's error when at least one
	// transform failed or was not run because an upstream one failed.
	ErrRunFailed = errors.New("pipeline run failed")
	// ErrHistory is wrapped when the run history file cannot be read or
	// written.
	ErrHistory = errors.New("run history")
)
