package cli

import "errors"

// Exit statuses of floe and of programs built with package cmdline.
const (
	// ExitOK: the command did what it was asked.
	ExitOK = 0
	// ExitFailure: it failed (a build failed, a table or the catalog could
	// not be read, ...); with status --check, the freshness of a transform
	// with a target could not be measured.
	ExitFailure = 1
	// ExitUsage: the command line is wrong.
	ExitUsage = 2
	// ExitStale: status --check found an output past its error_after.
	ExitStale = 3
)

// exitError carries an exit status other than ExitFailure.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }

// exitCode is the status an error asks for (ExitFailure by default).
func exitCode(err error) int {
	var e exitError
	if errors.As(err, &e) {
		return e.code
	}
	return ExitFailure
}
