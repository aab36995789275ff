#!/usr/bin/env bash
# Peak memory of the changelog of a copy-on-write rewrite of one large data
# file (goal: under 1 GiB RSS for a 10M-row file). Builds bench/cmd/cowmem,
# builds the table in one process (append of ROWS rows in one file, then a
# copy-on-write delete of 5 rows), and streams the changelog of that delete
# in a second process, under /usr/bin/time -v when it is installed.
#
#   bench/cowmem.sh [ROWS]          # default 10000000
#   HEAPPROFILE=/tmp/cow.heap bench/cowmem.sh   # also write the heap profile at the peak
#   BUDGET=134217728 bench/cowmem.sh            # changelog memory budget in bytes
set -euo pipefail
cd "$(dirname "$0")/.."
rows=${1:-10000000}
work=$(mktemp -d "${TMPDIR:-/tmp}/floe-cowmem.XXXXXX")
trap 'rm -rf "$work"' EXIT
go build -o "$work/cowmem" ./bench/cmd/cowmem
echo "# cowmem: $rows rows, $(nproc) cores, $(go env GOVERSION), GOGC=${GOGC:-100} GOMEMLIMIT=${GOMEMLIMIT:-off}"
"$work/cowmem" -warehouse "$work/wh" -phase build -rows "$rows"
args=(-warehouse "$work/wh" -phase changelog -budget "${BUDGET:-0}")
if [[ -n "${HEAPPROFILE:-}" ]]; then
	args+=(-heapprofile "$HEAPPROFILE")
fi
if [[ -x /usr/bin/time ]]; then
	/usr/bin/time -v "$work/cowmem" "${args[@]}" 2> "$work/time.txt"
	grep -E 'Maximum resident set size|Elapsed \(wall clock\)' "$work/time.txt" | sed 's/^[[:space:]]*/# time -v: /'
else
	"$work/cowmem" "${args[@]}"
fi
