// Command cdc is a program built with floe's Go API: the seeds' identity
// CDC transform and their filtered changelog, run with the command line
// package cmdline gives it:
//
//	cdc build [NAME...] [--full]
//	cdc run [--once | --every 15m] [NAME...]
//	cdc status
//
// orders_copy replicates shop.orders by id; active_orders keeps the active
// rows of orders_copy, deleting those that stop being active. Because
// active_orders reads orders_copy, it always builds after it.
package main

import (
	"os"

	"github.com/floedata/floe"
	"github.com/floedata/floe/cmdline"
)

// identityCDC replicates the inserts, updates and deletes of shop.orders
// into shop.orders_copy by id: the whole table on a full build, the
// changelog since the last build otherwise.
func identityCDC() *floe.Transform {
	return floe.NewTransform("orders_copy", func(ctx *floe.Context) error {
		src, out := ctx.Input("source"), ctx.Output("output")
		if !ctx.IsIncremental() {
			rows, err := src.Current()
			if err != nil {
				return err
			}
			return out.Write(rows)
		}
		changes, err := src.Changelog("id")
		if err != nil {
			return err
		}
		return out.ApplyChangelog(changes, "id")
	},
		floe.WithInput("source", "shop.orders"),
		floe.WithOutput("output", "shop.orders_copy", floe.Identifier("id")),
		floe.WithReadMode(floe.Changelog))
}

// activeOrders keeps the active orders: rows that stop being active (or
// whose status becomes NULL) are deleted.
func activeOrders() *floe.Transform {
	return floe.NewTransform("active_orders", func(ctx *floe.Context) error {
		src := ctx.Input("source").Filter("status = 'active'")
		out := ctx.Output("output")
		if !ctx.IsIncremental() {
			rows, err := src.Current()
			if err != nil {
				return err
			}
			return out.Write(rows)
		}
		changes, err := src.Changelog("id")
		if err != nil {
			return err
		}
		return out.ApplyChangelog(changes, "id")
	},
		floe.WithInput("source", "shop.orders_copy"),
		floe.WithOutput("output", "shop.active_orders", floe.Identifier("id")),
		floe.WithReadMode(floe.Changelog),
		floe.WithSemanticVersion(1))
}

func main() {
	os.Exit(cmdline.Main(activeOrders(), identityCDC()))
}
