#!/usr/bin/env bash
# Moves the packages of floe that are not contract under internal/ (issue 17):
#
#   bash internal/tools/mkinternal.sh          move, rewrite imports, gofmt, build, vet
#   bash internal/tools/mkinternal.sh -n       print what it would move
#
# Run it from a clean work tree on the branch that has every other branch merged; it
# stages the result (git mv) and leaves committing to you. It stops at the first problem.
#
# Public, and why (TestPublicAPISurface in apisurface_test.go keeps their APIs free of
# types a user could not name):
#   floe (root)        the transform API: Transform, Context, Runner, options; aliases of transform
#   cmdline            the command line of programs built with the API
#   catalog            every API takes a *catalog.Catalog; opening catalogs from config files
#   changelog          row-level changes between snapshots, a product on its own
#   merge              apply_changelog and MERGE INTO (floe apply, floe merge)
#   delta, delta/deltasync   reading Delta tables and their Change Data Feed; the sync into Iceberg
#   pipeline, pipeline/web   several transforms: YAML files, schedules, status, metrics, status page
#   expr               the SQL expression language: merge.Merge takes an *expr.Merge, and
#                      CompilePredicate/CompileAssignments feed tableops
#   tableops           writing tables (append, delete/update by predicate, overwrite, compact,
#                      branches, rollback): what a program does around its transforms
#   s3io               registers floe's S3 IO where a program is assembled
#
# Moved under internal/ (engine parts and the CLI; nothing public exposes their types
# except through aliases such as floe.Result = transform.Result, tableops.Mode = write.Mode):
#   transform -> internal/transform   (the root re-exports all of it)
#   cli -> internal/cli               (cmd/floe and cmdline call it)
#   commit, write, scan, rows, state, rowfile, ddl -> internal/<same>
#   delta/deltatest -> internal/deltatest   (a test-fixture writer)
#
# Left where they are: cmd/floe (the binary), examples/, bench/ (benchmark programs, not an
# API), interop/ (the interoperability suite, run as ./interop/...).
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"

module=github.com/floedata/floe
moves=(
	"transform internal/transform"
	"cli internal/cli"
	"commit internal/commit"
	"write internal/write"
	"scan internal/scan"
	"rows internal/rows"
	"state internal/state"
	"rowfile internal/rowfile"
	"ddl internal/ddl"
	"delta/deltatest internal/deltatest"
)

dry=false
[ "${1:-}" = "-n" ] && dry=true

for m in "${moves[@]}"; do
	read -r from to <<<"$m"
	[ -d "$from" ] || { echo "mkinternal: $from does not exist (moved already?)" >&2; exit 1; }
	[ -e "$to" ] && { echo "mkinternal: $to exists" >&2; exit 1; }
	echo "mkinternal: $from -> $to"
done
$dry && exit 0

if [ -n "$(git status --porcelain)" ]; then
	echo "mkinternal: the work tree has changes; commit or stash them first" >&2
	exit 1
fi

# Move: git mv keeps the history.
for m in "${moves[@]}"; do
	read -r from to <<<"$m"
	mkdir -p "$(dirname "$to")"
	git mv "$from" "$to"
done

# Rewrite the import paths (quoted, so "floe/scan" does not touch "floe/scanner") in Go
# files, and package paths in the text that names them (-ldflags -X of cli.Version, docs).
gofiles=$(git ls-files '*.go')
textfiles=$(git ls-files '*.md' '*.sh' '.ci/*' 'Makefile' '*.yaml' '*.yml' | grep -v '^internal/tools/mkinternal.sh$' || true)
for m in "${moves[@]}"; do
	read -r from to <<<"$m"
	old="$module/$from"
	new="$module/$to"
	# shellcheck disable=SC2086
	perl -pi -e "s#\"\Q$old\E\"#\"$new\"#g; s#\"\Q$old\E/#\"$new/#g" $gofiles
	if [ -n "$textfiles" ]; then
		# shellcheck disable=SC2086
		perl -pi -e "s#\Q$old\E([./\"\s])#$new\$1#g" $textfiles
	fi
done

# Doc comments that name a moved file by path (e.g. "commit/classify.go") are left to
# review: list them.
for m in "${moves[@]}"; do
	read -r from _ <<<"$m"
	git grep -n "\b$from/[a-z_]*\.go" -- '*.go' '*.md' | grep -v "internal/$from/" || true
done | sed 's/^/mkinternal: review path: /' >&2

gofmt -w $gofiles
go build ./...
go vet ./...
go vet -tags interop ./interop/...
go mod tidy -diff
git add -A
echo "mkinternal: done; run go test ./... and review git diff --cached --stat" >&2
