package cli

import (
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/floedata/floe/internal/rowfile"
)

// One vocabulary: the columns that identify a row are the key (--key)
// everywhere. The older spellings keep working and warn.

// keyFlag binds --key to v on c, with old spellings (identifier,
// identifier-columns, equality-columns) as aliases that warn on stderr.
func keyFlag(c *cobra.Command, v *string, usage string, aliases ...string) {
	f := c.Flags()
	f.StringVar(v, "key", "", usage)
	for _, old := range aliases {
		f.StringVar(v, old, "", usage)
		// NB: not pflag's MarkDeprecated, which prints its notice on
		// stdout, into machine-readable output; warnAliases warns.
		_ = f.MarkHidden(old)
		_ = f.SetAnnotation(old, aliasOf, []string{"key"})
	}
}

// aliasOf annotates an old flag spelling with the flag it stands for.
const aliasOf = "floe-alias-of"

// warnAliases warns on stderr for each old flag spelling cmd was given.
func (a *app) warnAliases(cmd *cobra.Command) {
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if to, ok := f.Annotations[aliasOf]; ok && len(to) == 1 {
			a.warnf("--%s is an old spelling of --%s; it works, but use --%s", f.Name, to[0], to[0])
		}
	})
}

// outputFormatOf picks the output format from a file name's extension:
// .csv, .jsonl/.ndjson, .json, .parquet/.parq. ok is false for another
// extension (the format stays --format's).
func outputFormatOf(path string) (rowfile.OutputFormat, bool) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".csv":
		return rowfile.OutputCSV, true
	case ".jsonl", ".ndjson":
		return rowfile.OutputJSONL, true
	case ".json":
		return rowfile.OutputJSON, true
	case ".parquet", ".parq":
		return rowfile.OutputParquet, true
	}
	return 0, false
}

// warnEqualityDeletes warns, once per command, that the table now has
// equality delete files, which PyIceberg 0.12 cannot read.
func (a *app) warnEqualityDeletes(table string) {
	if a.warnedEquality {
		return
	}
	a.warnedEquality = true
	a.warnf("%s now has equality delete files: PyIceberg 0.12 cannot read such tables (Spark, Trino and floe can); "+
		"`floe table compact %s` rewrites them away, or use --delete-mode position", table, table)
}
