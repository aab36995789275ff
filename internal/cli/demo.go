package cli

import (
	"github.com/spf13/cobra"

	"github.com/floedata/floe/internal/demo"
)

func demoCommand(a *app) *cobra.Command {
	var dir string
	var keep bool
	c := &cobra.Command{
		Use:   "demo",
		Short: "Show what floe does, end to end, on the embedded catalog in a fresh folder",
		Long: `Run floe's whole story on the embedded catalog in a fresh folder: create a source
table, write and change rows copy-on-write and merge-on-read, read the changelog
between snapshots, and check the results. Nothing outside the folder is touched.`,
		Example: "  floe demo\n  floe demo --dir /tmp/floe-demo --keep",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return demo.Run(cmd.Context(), a.stdout, dir, keep)
		},
	}
	c.Flags().StringVar(&dir, "dir", "", "folder for the demo's warehouse (default: a new temporary folder)")
	c.Flags().BoolVar(&keep, "keep", false, "keep the folder afterwards")
	return c
}
