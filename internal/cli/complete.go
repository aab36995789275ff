package cli

import (
	"context"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/spf13/cobra"

	"github.com/floedata/floe/catalog"
)

// Shell completion (cobra's `floe completion bash|zsh|fish|powershell`)
// offers the catalog's names for every argument that is a table or a
// namespace. Which arguments those are is read from each command's Use
// string: NS.T is a table, NS a namespace; argKinds below covers the
// commands whose placeholders are named otherwise, or that name something
// new. Nothing else needs registering: a command whose Use says NS.T is
// completed.

// argKind is what an argument names, for completion.
type argKind int

const (
	argOther        argKind = iota // not a catalog name: no completion
	argFile                        // a file: the shell's file completion
	argTable                       // an existing table: ns.t
	argNamespace                   // an existing namespace
	argNewTable                    // a table to be made: its namespace, ns.
	argNewNamespace                // a namespace to be made: its parent, ns.
)

// argKinds gives the arguments of the commands (by path below the program's
// name) whose Use placeholders do not say which kind they are. An
// argument past the end repeats the last kind when the Use placeholder
// ends in "..." and is argOther otherwise.
var argKinds = map[string][]argKind{
	"sync":             {argTable, argTable},
	"namespace list":   {argNamespace},
	"namespace create": {argNewNamespace},
	"table create":     {argNewTable},
	"table register":   {argNewTable, argFile},
	"table rename":     {argTable, argNewTable},
}

// completeTimeout bounds the catalog calls of one completion: a shell
// waits for it, and an unreachable catalog must not hang the prompt.
const completeTimeout = 3 * time.Second

// registerCompletions gives every command under c that takes a table or a
// namespace argument a ValidArgsFunction listing the catalog's names
// (unless it has one of its own).
func (a *app) registerCompletions(c *cobra.Command) {
	if kinds, variadic := commandArgKinds(c); c.ValidArgsFunction == nil && slices.ContainsFunc(kinds, isCatalogArg) {
		c.ValidArgsFunction = func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			k := argOther
			switch {
			case len(args) < len(kinds):
				k = kinds[len(args)]
			case variadic:
				k = kinds[len(kinds)-1]
			}
			return a.completeArg(cmd.Context(), k, toComplete)
		}
	}
	for _, sub := range c.Commands() {
		a.registerCompletions(sub)
	}
}

func isCatalogArg(k argKind) bool { return k >= argTable }

// commandArgKinds returns the kinds of c's positional arguments, from
// argKinds or else from its Use string, and whether the last one repeats.
func commandArgKinds(c *cobra.Command) ([]argKind, bool) {
	fields := strings.Fields(c.Use)
	if len(fields) < 2 {
		return nil, false
	}
	var kinds []argKind
	variadic := false
	for _, f := range fields[1:] {
		if strings.HasPrefix(f, "-") || strings.HasPrefix(f, "[-") || strings.HasPrefix(f, `"`) || strings.HasPrefix(f, "|") {
			break // flags, and whatever follows them, are not positional
		}
		f = strings.Trim(f, "[]")
		variadic = strings.HasSuffix(f, "...")
		kinds = append(kinds, placeholderKind(strings.TrimSuffix(f, "...")))
	}
	path := strings.TrimSpace(strings.TrimPrefix(c.CommandPath(), c.Root().Name()))
	if k, ok := argKinds[path]; ok {
		return k, false
	}
	return kinds, variadic
}

// placeholderKind reads one Use placeholder.
func placeholderKind(p string) argKind {
	switch {
	case p == "NS.T":
		return argTable
	case p == "NS":
		return argNamespace
	case strings.Contains(p, "FILE"), strings.Contains(p, "PATH"), strings.Contains(p, "DIR"), strings.HasSuffix(p, ".yaml"):
		return argFile
	}
	return argOther
}

// completeArg lists the names an argument of kind k may take that start
// with toComplete. A table is offered as its namespace and a dot until
// the namespace is typed (no space after it, so the table name follows),
// then as ns.t. It opens the catalog the global flags name, but never
// creates one (where none exists it offers nothing), lists without
// loading any table, and prints nothing: a failure offers nothing.
func (a *app) completeArg(ctx context.Context, k argKind, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	switch k {
	case argFile:
		return nil, cobra.ShellCompDirectiveDefault
	case argOther:
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(catalog.WithoutRetry(ctx), completeTimeout)
	defer cancel()
	o := catalog.Options{Warehouse: a.warehouse, Name: a.catalogName, ConfigFile: a.configFile, MustExist: true}
	if f := catalog.LocalFile(o); f != "" {
		if _, err := os.Stat(f); err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp // no catalog there: make none
		}
	}
	cat, err := catalog.Open(ctx, o)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	defer cat.Close()

	// toComplete is parent.rest: names below parent that start with rest.
	var parent table.Identifier
	rest := toComplete
	if i := strings.LastIndex(toComplete, "."); i >= 0 {
		p, err := catalog.ParseNamespace(toComplete[:i])
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		parent, rest = p, toComplete[i+1:]
	}
	var out []cobra.Completion
	nsSuffix := "" // a namespace to complete further ends in a dot
	if k != argNamespace {
		nsSuffix = "."
	}
	for _, ns := range childNamespaces(ctx, cat, parent) {
		if strings.HasPrefix(ns[len(ns)-1], rest) {
			out = append(out, catalog.FormatName(ns)+nsSuffix)
		}
	}
	if k == argTable && len(parent) > 0 {
		tables, _ := cat.ListTables(ctx, parent)
		for _, t := range tables {
			if strings.HasPrefix(t[len(t)-1], rest) {
				out = append(out, catalog.FormatName(t))
			}
		}
	}
	slices.Sort(out)
	dir := cobra.ShellCompDirectiveNoFileComp
	if slices.ContainsFunc(out, func(c cobra.Completion) bool { return strings.HasSuffix(c, ".") }) {
		dir |= cobra.ShellCompDirectiveNoSpace
	}
	return out, dir
}

// childNamespaces lists the namespaces one level below parent (the top
// level when parent is empty). Catalogs differ (the SQL catalog lists
// every level, REST only the next), so names are cut to that level.
func childNamespaces(ctx context.Context, cat *catalog.Catalog, parent table.Identifier) []table.Identifier {
	nss, err := cat.ListNamespaces(ctx, parent)
	if err != nil {
		return nil
	}
	var out []table.Identifier
	for _, ns := range nss {
		if len(ns) <= len(parent) || !slices.Equal(ns[:len(parent)], parent) {
			continue
		}
		ns = ns[:len(parent)+1]
		if !slices.ContainsFunc(out, func(o table.Identifier) bool { return slices.Equal(o, ns) }) {
			out = append(out, ns)
		}
	}
	return out
}
