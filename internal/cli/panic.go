package cli

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// ExitInternal is the exit status of a command stopped by a bug in floe
// (a Go panic): EX_SOFTWARE of sysexits.h.
const ExitInternal = 70

// EnvDebug, set to 1, makes floe print the stack trace of an internal
// error.
const EnvDebug = "FLOE_DEBUG"

// reportPanic turns a panic that escaped a command into an error message
// naming the command line, without the Go runtime's stack dump (unless
// FLOE_DEBUG=1), and returns ExitInternal.
func reportPanic(stderr io.Writer, prog string, args []string, p any) int {
	fmt.Fprintf(stderr, "%s: internal error: %v\n", prog, p)
	fmt.Fprintf(stderr, "%s: command: %s\n", prog, commandLine(prog, args))
	if os.Getenv(EnvDebug) == "1" {
		fmt.Fprintf(stderr, "%s", debug.Stack())
	} else {
		fmt.Fprintf(stderr, "%s: this is a bug in floe; please report it with the command above (%s=1 prints the stack trace). Commits are atomic: a table holds either all of a command's change or none of it.\n", prog, EnvDebug)
	}
	return ExitInternal
}

// reportInternal follows the message of an error that carries a panic
// recovered in a goroutine (safe.ErrInternal) as reportPanic does, and
// returns ExitInternal.
func reportInternal(stderr io.Writer, prog string, args []string) int {
	fmt.Fprintf(stderr, "%s: command: %s\n", prog, commandLine(prog, args))
	if os.Getenv(EnvDebug) != "1" {
		fmt.Fprintf(stderr, "%s: this is a bug in floe; please report it with the command above (%s=1 prints the stack trace). Commits are atomic: a table holds either all of a command's change or none of it.\n", prog, EnvDebug)
	}
	return ExitInternal
}

// commandLine renders prog and args as a shell would take them.
func commandLine(prog string, args []string) string {
	parts := []string{prog}
	for _, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$`*?[]{}()<>|&;#~") {
			a = strconv.Quote(a)
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}
