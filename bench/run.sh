#!/usr/bin/env bash
# Runs floe's benchmarks in interleaved rounds and summarises them as
# Markdown (medians, spread over rounds, per-round ratios against goals).
# Each round is one process running every selected benchmark, both
# variants of each comparison back to back; even rounds run the variants
# in reverse order (FLOE_BENCH_REVERSE=1), so neither always runs first.
#
#   bench/run.sh [ROUNDS] [BENCH_REGEXP]      # defaults: 5 rounds, every benchmark
#   BENCHTIME=3x OUT=/tmp/floe-bench bench/run.sh 5 'Scan|Append'
#
# The round outputs stay in $OUT (a new temporary folder by default).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-5}
pattern=${2:-.}
benchtime=${BENCHTIME:-3x}
out=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/floe-bench.XXXXXX")}
mkdir -p "$out"
go test -c -o "$out/bench.test" ./bench/
go build -o "$out/benchratio" ./bench/cmd/benchratio
{
	echo "# $(date -u +%FT%TZ) $(uname -srm), $(nproc) cores, $(go env GOVERSION), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo "# rounds=$rounds bench='$pattern' benchtime=$benchtime; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$out/machine.txt"
for r in $(seq 1 "$rounds"); do
	reverse=$(((r + 1) % 2))
	echo "## round $r (reverse=$reverse)" >&2
	(cd bench && FLOE_BENCH_REVERSE=$reverse "$out/bench.test" -test.run '^$' -test.bench "$pattern" \
		-test.benchtime "$benchtime" -test.benchmem) > "$out/round-$r.txt"
	grep '^Benchmark' "$out/round-$r.txt" >&2 || true
done
echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/machine.txt"
"$out/benchratio" -pairs 'floe/iceberg-go:1.2,changelog/plain:2' "$out"/round-*.txt | tee "$out/summary.md"
echo "# rounds and summary in $out" >&2
