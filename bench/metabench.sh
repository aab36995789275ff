#!/usr/bin/env bash
# Fixed costs and the size of the table (docs/benchmarks.md section 7):
# `floe version`, and `floe apply` of 10 changes touching one data file of
# generated tables from 100 to 100,000 files, 5 to 500 manifests and 10 to
# 5,000 snapshots, plus the incremental pipeline build that carries those
# changes to a copy, each as its own floe process. Builds floe and
# bench/cmd/metabench, generates the tables once (about 20 minutes and
# 2 GB here: 270,000 small Parquet files), then runs ROUNDS interleaved
# rounds; every run is checked row by row.
#
#   bench/metabench.sh [ROUNDS]                   # default 3
#   ONLY='base,goal' bench/metabench.sh 5         # only the tables whose label contains these
#   FLOE=/path/to/floe bench/metabench.sh         # measure another floe binary on the same tables
#   ROOT=/path bench/metabench.sh                 # where the warehouse is kept (reused when present)
#
# One apply, profiled in-process (no process start):
#   metabench -phase profile -warehouse DIR -only goal -rounds 3 -cpuprofile cpu.prof
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
root=${ROOT:-${TMPDIR:-/tmp}/floe-metabench}
mkdir -p "$root"
go build -o "$root/metabench" ./bench/cmd/metabench
floe=${FLOE:-$root/floe}
if [[ -z "${FLOE:-}" ]]; then
	go build -o "$floe" ./cmd/floe
fi
echo "# $(date -u +%FT%TZ) $(uname -srm), $(nproc) cores, $(go env GOVERSION), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
echo "# load average before the build: $(cut -d' ' -f1-3 /proc/loadavg)"
"$root/metabench" -phase build -warehouse "$root/warehouse" 2>&1 | grep -v ' exists$' || true
echo "# load average before the runs: $(cut -d' ' -f1-3 /proc/loadavg)"
"$root/metabench" -phase run -warehouse "$root/warehouse" -floe "$floe" -rounds "$rounds" -only "${ONLY:-}"
