// Package cli is floe's command line: cobra commands that parse flags,
// call floe's packages and print results. It holds no logic of its own
// beyond that.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/internal/rowfile"
	"github.com/floedata/floe/internal/safe"
)

// Version is floe's version, set at build time with
// -ldflags "-X github.com/floedata/floe/cli.Version=...".
var Version = "0.1.0-dev"

// usageError marks errors in how a command was called (exit status 2).
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// app holds the global options and the resources commands share.
type app struct {
	warehouse   string
	catalogName string
	configFile  string
	format      string
	quiet       bool
	create      bool // the command may create the embedded catalog
	formatSet   bool // --format was given (else --output's extension picks it)

	warnedEquality bool // the equality deletes warning was printed

	stdout, stderr io.Writer
	stdin          io.Reader
	cat            *catalog.Catalog
}

// Catalog opens the catalog chosen by the global flags, once.
func (a *app) Catalog(ctx context.Context) (*catalog.Catalog, error) {
	if a.cat != nil {
		return a.cat, nil
	}
	cat, err := catalog.Open(ctx, catalog.Options{Warehouse: a.warehouse, Name: a.catalogName, ConfigFile: a.configFile, MustExist: !a.create})
	if err != nil {
		return nil, err
	}
	a.cat = cat
	return cat, nil
}

func (a *app) close() {
	if a.cat != nil {
		a.cat.Close()
		a.cat = nil
	}
}

// outputFormat parses --format.
func (a *app) outputFormat() (rowfile.OutputFormat, error) {
	f, err := rowfile.ParseOutputFormat(a.format)
	if err != nil {
		return 0, usageError{err}
	}
	return f, nil
}

// infof prints a message for people on stderr, unless --quiet.
func (a *app) infof(format string, args ...any) {
	if a.quiet {
		return
	}
	fmt.Fprintf(a.stderr, format+"\n", args...)
}

// NewCommand returns floe's root command writing to the given streams.
func NewCommand(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr}
	root := &cobra.Command{
		Use:   "floe",
		Short: "Change data capture on Iceberg and Delta Lake tables, without a Spark cluster",
		Long: `floe keeps derived tables in sync with changing source tables: row-level changelogs
between Iceberg snapshots, applying changes by key (upserts, deletes, MERGE INTO),
incremental transforms, and Delta Lake Change Data Feed into Iceberg.

By default floe uses an embedded Iceberg catalog (SQLite, the layout of Iceberg's
JdbcCatalog) in ./warehouse, made by floe init or by the first command that creates
something; --warehouse or FLOE_WAREHOUSE moves it. --catalog NAME picks a catalog from
a PyIceberg-style YAML file (--config, FLOE_CONFIG, ~/.floe.yaml or the .pyiceberg.yaml
PyIceberg reads, with its PYICEBERG_CATALOG__* variables and default-catalog).

Exit status: 0 on success, 1 on a failure, 2 on a usage error (a bad flag, argument or
command).`,
		Example: `  floe demo
  floe init
  floe namespace create shop
  floe table create shop.orders --schema "id long not null, status string" --key id
  floe table append shop.orders orders.csv
  floe changelog shop.orders --format jsonl`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPostRun: func(*cobra.Command, []string) {
			a.close()
		},
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	a.addGlobalFlags(root)

	root.AddCommand(
		versionCommand(a),
		namespaceCommand(a),
		tableCommand(a),
		changelogCommand(a),
		demoCommand(a),
	)
	for _, extra := range extraCommands {
		root.AddCommand(extra(a))
	}
	setArgsUsage(root)
	a.registerCompletions(root) // shell completion of table and namespace names (complete.go)
	return root
}

// addGlobalFlags adds the flags every floe command (and every program
// built with package cmdline) has.
func (a *app) addGlobalFlags(root *cobra.Command) {
	pf := root.PersistentFlags()
	pf.StringVar(&a.warehouse, "warehouse", "", "warehouse folder of the embedded catalog (default ./warehouse, or $FLOE_WAREHOUSE)")
	pf.StringVar(&a.catalogName, "catalog", "", "use this catalog from the configuration file instead of the embedded one")
	pf.StringVar(&a.configFile, "config", "", "catalog configuration file (default $FLOE_CONFIG, ~/.floe.yaml or ~/.pyiceberg.yaml)")
	pf.StringVar(&a.format, "format", "table", "output format: table, jsonl, csv or json")
	pf.BoolVarP(&a.quiet, "quiet", "q", false, "print only results, no progress or messages")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		a.create = createsCatalog(cmd)
		a.formatSet = cmd.Flags().Changed("format")
		a.warnAliases(cmd)
		_, err := a.outputFormat() // a bad --format is a usage error before anything runs
		return err
	}
}

// extraCommands are registered by other files of this package as they grow.
var extraCommands []func(*app) *cobra.Command

// setArgsUsage makes argument-count errors usage errors on every command,
// and an unknown subcommand a usage error (cobra prints the parent's help
// and succeeds) on every command that only groups others.
func setArgsUsage(c *cobra.Command) {
	if !c.Runnable() && c.HasSubCommands() {
		c.Args = cobra.ArbitraryArgs
		c.RunE = unknownSubcommand
	}
	if c.Args != nil {
		check := c.Args
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := check(cmd, args); err != nil {
				return usageError{err}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		setArgsUsage(sub)
	}
}

// unknownSubcommand runs a command that only groups others: alone it
// prints its help; with an argument that names no subcommand it is a usage
// error naming it (with suggestions).
func unknownSubcommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return cmd.Help()
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
	}
	return usageError{errors.New(msg)}
}

// Main runs floe with os.Args and returns the process exit status: 0, 1
// for a failure, 2 for a usage error.
func Main() int {
	return Run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
}

// Run runs floe with args and returns the exit status.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return execute(ctx, NewCommand(stdin, stdout, stderr), "floe", args, stderr)
}

// execute runs cmd with args and turns its error into an exit status,
// printing it prefixed with the program's name.
func execute(ctx context.Context, cmd *cobra.Command, prog string, args []string, stderr io.Writer) (code int) {
	defer func() {
		if p := recover(); p != nil {
			code = reportPanic(stderr, prog, args, p)
		}
	}()
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	msg := err.Error()
	if !strings.HasSuffix(msg, "\n") {
		msg += "\n"
	}
	fmt.Fprint(stderr, prog+": "+msg)
	if errors.Is(err, safe.ErrInternal) {
		return reportInternal(stderr, prog, args)
	}
	var u usageError
	if errors.As(err, &u) || strings.HasPrefix(err.Error(), "unknown command") || strings.HasPrefix(err.Error(), "unknown flag") {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", prog)
		return 2
	}
	return exitCode(err)
}

func versionCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print floe's version and the catalogs and storage compiled in",
		Example: "  floe version",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(a.stdout, "floe %s\n", Version)
			catalogs, schemes := compiledBackends()
			fmt.Fprintf(a.stdout, "catalogs: embedded, %s\nstorage: %s\n", strings.Join(catalogs, ", "), strings.Join(schemes, ", "))
			return nil
		},
	}
}
