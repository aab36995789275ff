#!/usr/bin/env bash
# Local vs Spark push-down on this machine (docs/benchmarks.md, section 10): a full sync and an
# incremental sync (1% of the rows updated) of an N-row table, each with --engine local and
# --engine spark, one after the other in one run so the figures compare as ratios.
#
#   bash .ci/spark.sh bash bench/spark.sh 1000000 10000000     # sizes in rows
#
# Needs FLOE_SPARK_REMOTE (bash .ci/spark.sh runs it with a fresh local server). The tables are
# applybench's (bench/cmd/applybench: 7 columns, a long key), 1M rows per data file. Before the
# timed runs one tiny Spark build warms the server's JVM up (its first query takes ~16 s).
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -n "${FLOE_SPARK_REMOTE:-}" ]] || { echo "bench/spark.sh: set FLOE_SPARK_REMOTE (run it under .ci/spark.sh)" >&2; exit 1; }
out=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/floe-spark-bench.XXXXXX")}
go build -o "$out/floe" ./cmd/floe
go build -o "$out/applybench" ./bench/cmd/applybench
echo "# $(date -u +%FT%TZ) $(uname -srm), $(nproc) cores, commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown), load $(cut -d' ' -f1-3 /proc/loadavg)"
t() { # t LABEL CMD...: wall seconds of CMD
	local label=$1 s e
	shift
	s=$(date +%s%N)
	"$@" >"$out/last.log" 2>&1 || { tail -5 "$out/last.log" >&2; return 1; }
	e=$(date +%s%N)
	awk -v l="$label" -v d=$((e - s)) 'BEGIN { printf "%s %.1f s\n", l, d / 1e9 }'
}
for rows in "$@"; do
	wh="$out/wh-$rows"
	rm -rf "$wh"
	"$out/applybench" -phase build -warehouse "$wh" -layout flat -rows "$rows" -file-rows 1000000 >/dev/null 2>&1
	f() { "$out/floe" --warehouse "$wh" --quiet "$@"; }
	bytes=$(f table snapshots bench.t_v2 --format jsonl 2>/dev/null | tail -1 | sed -n 's/.*"total-files-size":"\([0-9]*\)".*/\1/p')
	echo "# rows=$rows, source files $bytes bytes"
	t "warmup-spark-tiny" f sync bench.t_v2 bench.warm_out --key id --filter "id < 10" --engine spark
	for e in local spark; do
		t "rows=$rows full-sync engine=$e" f sync bench.t_v2 "bench.out_$e" --key id --filter "status <> 'cancelled'" --engine "$e"
	done
	f table update bench.t_v2 --set "score = score + 1" --where "id % 100 = 7" >/dev/null
	for e in local spark; do
		t "rows=$rows incremental-sync(1%) engine=$e" f sync bench.t_v2 "bench.out_$e" --key id --filter "status <> 'cancelled'" --engine "$e"
	done
	a=$(f table scan bench.out_local --format csv | sort | md5sum)
	b=$(f table scan bench.out_spark --format csv | sort | md5sum)
	[[ "$a" == "$b" ]] && echo "# rows=$rows: outputs equal" || echo "# rows=$rows: OUTPUTS DIFFER"
	rm -rf "$wh"
done
