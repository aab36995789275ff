package pipeline

import (
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"

	"github.com/floedata/floe/internal/transform"
	"github.com/floedata/floe/merge"
	"github.com/floedata/floe/pushdown"
)

// SyncSpec describes the seeds' CDC transform: keep Dst equal to
// SELECT Columns FROM Src WHERE Filter, by key.
type SyncSpec struct {
	Name    string   // transform name (default "sync <src> -> <dst>")
	Src     string   // source table
	Dst     string   // destination table
	Keys    []string // key columns (unique in the source)
	Filter  string   // SQL predicate; rows that stop matching are deleted
	Columns []string // projection (must include the keys); nil = all
	Branch  string   // source branch ("" = main)
	// PartitionBy is the partition spec floe creates the destination with.
	PartitionBy string
	// Properties for the destination table when floe creates it.
	Properties map[string]string
	// SemanticVersion, when bumped, rebuilds the destination in full.
	SemanticVersion int
	// AllowNonIdentifierKey lets Keys differ from the identifier fields of
	// an existing destination (refused otherwise). Keys must still be
	// unique in the source.
	AllowNonIdentifierKey bool
}

// Sync returns the transform for spec. Its first build copies the
// filtered, projected source; later builds apply the source's changelog
// per key, deleting rows that leave the filter (or whose filter columns
// become NULL). Its semantic version follows the keys, filter and
// columns (and SemanticVersion), so changing them rebuilds the
// destination.
func Sync(spec SyncSpec) (*transform.Transform, error) {
	if len(spec.Keys) == 0 {
		return nil, fmt.Errorf("sync %s -> %s: --key is required", spec.Src, spec.Dst)
	}
	if spec.Columns != nil {
		have := map[string]bool{}
		for _, c := range spec.Columns {
			have[c] = true
		}
		for _, k := range spec.Keys {
			if !have[k] {
				return nil, fmt.Errorf("sync %s -> %s: --columns must include the key column %q", spec.Src, spec.Dst, k)
			}
		}
	}
	name := spec.Name
	if name == "" {
		name = fmt.Sprintf("sync %s -> %s", spec.Src, spec.Dst)
	}
	version := optionsVersion(spec.SemanticVersion, strings.Join(spec.Keys, ","), spec.Filter, strings.Join(spec.Columns, ","))
	compute := func(ctx *transform.Context) error {
		src := ctx.Input("source")
		if spec.Filter != "" {
			src = src.Filter(spec.Filter)
		}
		out := ctx.Output("destination")
		if tbl := out.Table(); tbl != nil && !spec.AllowNonIdentifierKey {
			if ids := merge.IdentifierNames(tbl); len(ids) > 0 && !merge.SameColumns(ids, spec.Keys) {
				return fmt.Errorf("%w: the key %s is not the identifier (%s) of %s: syncing by it can give several rows one identifier value; use --key %s, or allow it explicitly (--allow-non-identifier-key, allow_non_identifier_key: true)",
					merge.ErrKeyNotIdentifier, strings.Join(spec.Keys, ", "), strings.Join(ids, ", "), spec.Dst, strings.Join(ids, ","))
			}
		}
		if !ctx.IsIncremental() {
			rows, err := src.Current()
			if err != nil {
				return err
			}
			if rows, err = rows.Select(spec.Columns...); err != nil {
				return err
			}
			return out.Replace(rows)
		}
		changes, err := src.Changelog(spec.Keys...)
		if err != nil {
			return err
		}
		if changes, err = changes.Select(spec.Columns...); err != nil {
			return err
		}
		return out.ApplyChangelog(changes, spec.Keys...)
	}
	outOpts := []transform.OutputOption{transform.Identifier(spec.Keys...),
		transform.PartitionBy(spec.PartitionBy), transform.TableProperties(spec.Properties)}
	if spec.AllowNonIdentifierKey {
		outOpts = append(outOpts, transform.AllowNonIdentifierKey())
	}
	return transform.New(name, compute,
		transform.WithInputOnBranch("source", spec.Src, spec.Branch),
		transform.WithOutput("destination", spec.Dst, outOpts...),
		transform.WithReadMode(transform.Changelog),
		transform.WithSemanticVersion(version),
		withPush(&transform.Push{Kind: pushdown.JobSync, Keys: spec.Keys, Filter: spec.Filter, Columns: spec.Columns})), nil
}

// withPush lets a remote engine run the transform's builds.
func withPush(p *transform.Push) transform.Option {
	return func(t *transform.Transform) { t.Push = p }
}

// optionsVersion derives a transform's semantic version from the options
// that change its output, so that changing them rebuilds the output. A
// user's bump (semantic, when not 0) changes it too.
func optionsVersion(semantic int, options ...string) int {
	s := strings.Join(options, "|")
	if semantic != 0 {
		s += "|v" + strconv.Itoa(semantic)
	}
	return int(crc32.ChecksumIEEE([]byte(s)) & 0x7fffffff)
}
