package cli

import (
	"strings"

	"github.com/spf13/cobra"
)

func init() { extraCommands = append(extraCommands, initCommand) }

// creatingCommands may create the embedded catalog when it does not exist
// (by their path below the program's name); every other command fails
// saying that no catalog exists there and how to choose one.
var creatingCommands = map[string]bool{
	"init": true, "namespace create": true, "table create": true, "table register": true,
	"sync": true, "delta sync": true, "run": true, "build": true,
}

// createsCatalog reports whether cmd may create the embedded catalog.
func createsCatalog(cmd *cobra.Command) bool {
	path := strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name())
	return creatingCommands[strings.TrimSpace(path)]
}

func initCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "init",
		Short: "Create the embedded catalog (./warehouse/catalog.db, or --warehouse DIR)",
		Long: `Create the embedded catalog: an Iceberg SQL catalog on a SQLite file, catalog.db in the
warehouse folder (./warehouse, --warehouse DIR or $FLOE_WAREHOUSE). Commands that create
something (namespace create, table create, sync, run, ...) create it too; every other
command fails where none exists instead of creating an empty one. Running init on an
existing catalog changes nothing.`,
		Example: "  floe init\n  floe init --warehouse /data/lake",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cat, err := a.Catalog(cmd.Context())
			if err != nil {
				return err
			}
			if cat.Warehouse() == "" {
				a.infof("catalog %q (%s) needs no init", cat.Name(), cat.Kind())
				return nil
			}
			a.infof("embedded catalog ready in %s", cat.Warehouse())
			return nil
		},
	}
}
