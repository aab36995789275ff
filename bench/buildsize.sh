#!/usr/bin/env bash
# Measures floe's builds (docs/benchmarks.md, "Binary size, build time, dependencies"):
#
#   bash bench/buildsize.sh [-cold] [REPO]
#
# For the default binary and the minimal one (every backend left out by its build tag), and for
# the release build the README installs (-trimpath -ldflags "-s -w"): the packages linked
# (go list -deps), the binary's size, and with -cold the time of a build from an empty build
# cache (wall and user+sys CPU seconds; CPU time is the figure to compare on a shared machine).
# Also the packages a program importing the root package or built like examples/cdc links.
# REPO defaults to this repository; give another checkout to measure it the same way (a
# checkout without the backend tags builds the same binary for both rows).
set -euo pipefail
cold=false
[ "${1:-}" = "-cold" ] && { cold=true; shift; }
repo=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
cd "$repo"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

minimal=floe_no_glue,floe_no_hive,floe_no_s3,floe_no_gcs,floe_no_azure
echo "| build | packages | size (MB) | cold build wall s | cold build CPU s |"
echo "|---|---:|---:|---:|---:|"
for b in "default::" "default, release:-trimpath -ldflags=-s\ -w:" "minimal tags, release:-trimpath -ldflags=-s\ -w:$minimal"; do
	IFS=: read -r name flags tags <<<"$b"
	eval "set -- $flags"
	deps=$(go list -deps -tags "$tags" ./cmd/floe | wc -l)
	wall=- cpu=-
	if $cold; then
		cache=$(mktemp -d)
		/usr/bin/time -f "%e %U %S" -o "$out/time" env GOCACHE="$cache" go build -tags "$tags" "$@" -o "$out/floe" ./cmd/floe
		rm -rf "$cache"
		read -r wall user sys <"$out/time"
		cpu=$(echo "$user + $sys" | bc)
	else
		go build -tags "$tags" "$@" -o "$out/floe" ./cmd/floe
	fi
	size=$(stat -c %s "$out/floe")
	printf '| %s | %s | %.1f | %s | %s |\n' "$name" "$deps" "$(echo "$size / 1000000" | bc -l)" "$wall" "$cpu"
done
echo
echo "| program | packages |"
echo "|---|---:|"
echo "| import \"github.com/floedata/floe\" | $(go list -deps . | wc -l) |"
[ -d examples/cdc ] && echo "| examples/cdc | $(go list -deps ./examples/cdc | wc -l) |"
echo "(load average at the end: $(cut -d' ' -f1-3 /proc/loadavg))"
