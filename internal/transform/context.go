package transform

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/floedata/floe/catalog"
)

// Context is what a compute function receives: the build's inputs and
// outputs, whether the build is incremental, a logger. It is a
// context.Context (cancelled when the build is stopped).
type Context struct {
	context.Context
	b *build
}

// IsIncremental reports whether this build processes only what changed
// since the last one. When false, outputs must be rebuilt from the inputs'
// current state (Write replaces, Changelog returns current rows as INSERTs).
func (c *Context) IsIncremental() bool { return c.b.incremental }

// Reason says why the build is not incremental ("" when it is).
func (c *Context) Reason() string { return c.b.reason }

// Input returns a declared input; it panics on an undeclared name (a
// programming error in the transform).
func (c *Context) Input(name string) *Input {
	in, ok := c.b.inputs[name]
	if !ok {
		panic(fmt.Sprintf("transform %s has no input %q", c.b.t.Name, name))
	}
	return in
}

// Output returns a declared output; it panics on an undeclared name.
func (c *Context) Output(name string) *Output {
	out, ok := c.b.outputs[name]
	if !ok {
		panic(fmt.Sprintf("transform %s has no output %q", c.b.t.Name, name))
	}
	return out
}

// Rebuild turns an incremental build into a full rebuild for reason (the
// build's Result then says so). Call it before reading any input; it does
// nothing when the build is already full.
func (c *Context) Rebuild(reason string) {
	if !c.b.incremental {
		return
	}
	c.b.incremental, c.b.reason = false, reason
	for _, in := range c.b.inputs {
		in.incremental = false
	}
}

// SetSummary adds key=value to the snapshot summary of every output commit
// of this build (set it before writing the outputs).
func (c *Context) SetSummary(key, value string) {
	if c.b.extra == nil {
		c.b.extra = map[string]string{}
	}
	c.b.extra[key] = value
}

// Logger is the build's logger.
func (c *Context) Logger() *slog.Logger { return c.b.log }

// Catalog is the catalog the transform runs against.
func (c *Context) Catalog() *catalog.Catalog { return c.b.r.Catalog }
