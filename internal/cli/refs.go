package cli

import (
	"os"
	"path/filepath"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go/table"
	"github.com/spf13/cobra"

	"github.com/floedata/floe/catalog"
	"github.com/floedata/floe/tableops"
)

func tableBranch(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "branch",
		Short:   "Create, list and drop branches",
		Example: "  floe table branch create shop.orders audit\n  floe table branch list shop.orders\n  floe table branch drop shop.orders audit",
	}
	var snapshot int64
	create := &cobra.Command{
		Use:     "create NS.T NAME [--snapshot ID]",
		Short:   "Create a branch at a snapshot (default: the current snapshot)",
		Example: "  floe table branch create shop.orders audit\n  floe table branch create shop.orders fix --snapshot 3051729675574597004",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			cat, ident, _, err := a.loadTable(ctx, args[0])
			if err != nil {
				return err
			}
			var at *int64
			if cmd.Flags().Changed("snapshot") {
				at = &snapshot
			}
			o, err := tableops.CreateBranch(ctx, cat, ident, args[1], at)
			if err != nil {
				return err
			}
			a.answerLost(o.AnswerLost, ident, o.CommitID)
			a.infof("created branch %s of %s at snapshot %d", o.Ref, catalog.FormatName(ident), o.SnapshotID)
			return nil
		},
	}
	create.Flags().Int64Var(&snapshot, "snapshot", 0, "snapshot the branch starts at")
	list := &cobra.Command{
		Use:     "list NS.T",
		Short:   "List a table's branches and tags",
		Example: "  floe table branch list shop.orders",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			_, _, tbl, err := a.loadTable(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			type r struct {
				name, typ string
				id        int64
			}
			var refs []r
			for n, ref := range tbl.Metadata().Refs() {
				refs = append(refs, r{n, string(ref.SnapshotRefType), ref.SnapshotID})
			}
			sort.Slice(refs, func(i, j int) bool { return refs[i].name < refs[j].name })
			cols := []column{{name: "name", typ: strType}, {name: "type", typ: strType}, {name: "snapshot_id", typ: arrow.PrimitiveTypes.Int64}}
			for _, x := range refs {
				cols[0].values = append(cols[0].values, x.name)
				cols[1].values = append(cols[1].values, x.typ)
				cols[2].values = append(cols[2].values, x.id)
			}
			return a.printColumns(cols)
		},
	}
	drop := &cobra.Command{
		Use:     "drop NS.T NAME",
		Short:   "Drop a branch or tag (never main)",
		Example: "  floe table branch drop shop.orders audit",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			name := args[1]
			if name == table.MainBranch {
				return usagef("the main branch cannot be dropped")
			}
			cat, ident, _, err := a.loadTable(ctx, args[0])
			if err != nil {
				return err
			}
			o, err := tableops.DropRef(ctx, cat, ident, name)
			if err != nil {
				return err
			}
			a.answerLost(o.AnswerLost, ident, o.CommitID)
			a.infof("dropped %s of %s", name, catalog.FormatName(ident))
			return nil
		},
	}
	cmd.AddCommand(create, list, drop)
	return cmd
}

func tableRollback(a *app) *cobra.Command {
	var to int64
	var branch string
	c := &cobra.Command{
		Use:     "rollback NS.T --to-snapshot ID",
		Short:   "Move a branch back to one of its ancestors (Iceberg's rollback_to_snapshot)",
		Example: "  floe table rollback shop.orders --to-snapshot 3051729675574597004",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("to-snapshot") {
				return usagef("--to-snapshot is required")
			}
			ctx := cmd.Context()
			cat, ident, _, err := a.loadTable(ctx, args[0])
			if err != nil {
				return err
			}
			o, err := tableops.Rollback(ctx, cat, ident, branch, to)
			if err != nil {
				return err
			}
			a.answerLost(o.AnswerLost, ident, o.CommitID)
			a.infof("rolled %s of %s back to snapshot %d", o.Ref, catalog.FormatName(ident), to)
			return nil
		},
	}
	c.Flags().Int64Var(&to, "to-snapshot", 0, "an ancestor of the branch head")
	c.Flags().StringVar(&branch, "branch", "", "the branch to roll back (default main)")
	return c
}

func tableSetCurrent(a *app) *cobra.Command {
	var snapshot int64
	var branch string
	c := &cobra.Command{
		Use:     "set-current NS.T --snapshot ID",
		Short:   "Point a branch at any snapshot (Iceberg's set_current_snapshot)",
		Example: "  floe table set-current shop.orders --snapshot 3051729675574597004",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("snapshot") {
				return usagef("--snapshot is required")
			}
			ctx := cmd.Context()
			cat, ident, _, err := a.loadTable(ctx, args[0])
			if err != nil {
				return err
			}
			o, err := tableops.SetCurrent(ctx, cat, ident, branch, snapshot)
			if err != nil {
				return err
			}
			a.answerLost(o.AnswerLost, ident, o.CommitID)
			a.infof("%s of %s now points at snapshot %d", o.Ref, catalog.FormatName(ident), snapshot)
			return nil
		},
	}
	c.Flags().Int64Var(&snapshot, "snapshot", 0, "any snapshot of the table")
	c.Flags().StringVar(&branch, "branch", "", "the branch to move (default main)")
	return c
}

func tableRegister(a *app) *cobra.Command {
	var root string
	c := &cobra.Command{
		Use:   "register NS.T METADATA_FILE [--path-root DIR]",
		Short: "Add an existing table to the catalog from one of its metadata files, without copying data",
		Long: `Add an existing table by its metadata file. Tables whose metadata and manifests hold
relative paths (as some engines write them) resolve them against --path-root; floe
remembers the root for later commands.`,
		Example: "  floe table register fixtures.lineitem warehouse/lineitem/metadata/v2.metadata.json\n  floe table register fixtures.t data/persistent/t/metadata/v4.metadata.json --path-root ../shared/testdata/iceberg/t",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			ident, cat, err := a.tableArg(ctx, args[0])
			if err != nil {
				return err
			}
			tbl, err := cat.Register(ctx, ident, args[1], root)
			if err != nil {
				return err
			}
			a.infof("registered %s from %s", catalog.FormatName(ident), tbl.MetadataLocation())
			return nil
		},
	}
	c.Flags().StringVar(&root, "path-root", "", "folder that relative paths in the metadata are relative to")
	return c
}

func createFile(path string) (*os.File, error) {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
	}
	return os.Create(path)
}
