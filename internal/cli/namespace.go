package cli

import (
	"github.com/spf13/cobra"

	"github.com/floedata/floe/catalog"
)

func namespaceCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "namespace",
		Aliases: []string{"ns"},
		Short:   "Create, list and drop namespaces",
		Example: "  floe namespace create shop\n  floe namespace list\n  floe namespace drop scratch",
	}
	var ifNotExists bool
	create := &cobra.Command{
		Use:     "create NS",
		Short:   "Create a namespace (nested: a.b)",
		Example: "  floe namespace create shop\n  floe namespace create analytics.daily --if-not-exists",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ns, err := catalog.ParseNamespace(args[0])
			if err != nil {
				return usageError{err}
			}
			cat, err := a.Catalog(cmd.Context())
			if err != nil {
				return err
			}
			if len(ns) > 1 {
				if err := cat.EnsureNamespace(cmd.Context(), ns[:len(ns)-1]); err != nil {
					return err
				}
			}
			if err := cat.CreateNamespace(cmd.Context(), ns, ifNotExists); err != nil {
				return err
			}
			a.infof("created namespace %s", catalog.FormatName(ns))
			return nil
		},
	}
	create.Flags().BoolVar(&ifNotExists, "if-not-exists", false, "succeed when the namespace already exists")
	list := &cobra.Command{
		Use:     "list [PARENT]",
		Short:   "List namespaces",
		Example: "  floe namespace list\n  floe namespace list analytics --format jsonl",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cat, err := a.Catalog(cmd.Context())
			if err != nil {
				return err
			}
			var parent []string
			if len(args) == 1 {
				if parent, err = catalog.ParseNamespace(args[0]); err != nil {
					return usageError{err}
				}
			}
			nss, err := cat.ListNamespaces(cmd.Context(), parent)
			if err != nil {
				return err
			}
			var names []any
			for _, ns := range nss {
				names = append(names, catalog.FormatName(ns))
			}
			return a.printColumns([]column{{name: "namespace", typ: strType, values: names}})
		},
	}
	cmd.AddCommand(create, list, namespaceDrop(a))
	return cmd
}
