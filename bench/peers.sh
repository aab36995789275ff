#!/usr/bin/env bash
# floe against its peers on the same generated tables (issue 14, "Peers kept"; docs/benchmarks.md,
# "Peers: floe, Spark, PyIceberg side by side"). applybench builds one warehouse (t_v2, t_v3: SIZE rows,
# 7 columns, a long key id, FILE_ROWS rows per data file) and the change rows (a tenth of SIZE: half
# UPDATE_AFTER, a quarter DELETE, a quarter INSERT, KEYS uniform by default); every measurement runs in its
# own process on a fresh copy of that warehouse at the same path. ROUNDS rounds, the order of the engines
# reversed every other round:
#
#   cow        floe apply (CLI, end to end) | Spark MERGE INTO | PyIceberg upsert + delete, copy-on-write, t_v2
#   mor-pos    floe apply --delete-mode position | Spark MERGE INTO, merge-on-read, t_v2 (position deletes)
#   mor-dv     the same on t_v3 (deletion vectors)
#   changelog  after a 1% copy-on-write update (floe table update): floe changelog --key id to Parquet |
#              Spark create_changelog_view(identifier_columns => id, compute_updates) with a grouped count
#
# Spark is local[2] with the pinned Iceberg runtime of interop (bash .ci/engines.sh installs it): its time is
# the statement in a session warmed up by one statement of the same shape; in brackets the end to end time
# of JVM and session start plus that statement. Peak RSS: /usr/bin/time for floe, VmHWM of the Python
# driver plus its JVM for Spark, ru_maxrss for PyIceberg. Checks: after each merge floe scans the result
# table (count and md5 of the sorted CSV rows, so every engine's table is read the same way); each
# changelog's rows are counted and their ids summed per change type. Prints a Markdown table of medians.
#
#   bash bench/peers.sh                    # SIZE=1m: 1M rows, 100k changes, 3 rounds (~15 min)
#   SIZE=10m ROUNDS=3 bash bench/peers.sh  # 10M rows, 1M changes
#   ENGINES='floe spark' SCENARIOS='cow changelog' KEEP=1 ROOT=/path bash bench/peers.sh
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
size=${SIZE:-1m}
case $size in
100k) rows=100000 file_rows=${FILE_ROWS:-10000} mem=${SPARK_MEMORY:-2g} ;;
1m) rows=1000000 file_rows=${FILE_ROWS:-100000} mem=${SPARK_MEMORY:-4g} ;;
10m) rows=10000000 file_rows=${FILE_ROWS:-1000000} mem=${SPARK_MEMORY:-8g} ;;
*) echo "bench/peers.sh: SIZE is 100k, 1m or 10m, not $size" >&2; exit 2 ;;
esac
changes=$((rows / 10))
rounds=${ROUNDS:-3}
keys=${KEYS:-uniform}
scenarios=${SCENARIOS:-cow mor-pos mor-dv changelog}
engines=${ENGINES:-floe spark pyiceberg}
cache=${FLOE_CACHE:-$HOME/.cache/floe}
manifest=$(ls -t "$cache"/interop-*.json 2>/dev/null | head -1)
[[ -n "$manifest" ]] || { echo "bench/peers.sh: no engines in $cache: run bash .ci/engines.sh" >&2; exit 1; }
py=$(sed -n 's/.*"python": "\(.*\)".*/\1/p' "$manifest")
export JAVA_HOME=${JAVA_HOME:-$(sed -n 's/.*"java_home": "\(.*\)".*/\1/p' "$manifest")}
jars=$("$py" -c 'import json,sys; print(",".join(j for j in json.load(open(sys.argv[1]))["spark_jars"] if "iceberg" in j or "sqlite" in j))' "$manifest")
root=${ROOT:-$(mktemp -d "${TMPDIR:-/tmp}/floe-peers.XXXXXX")}
root=$(cd "$root" && pwd)
mkdir -p "$root"
if [[ "${KEEP:-0}" != 1 ]]; then
	trap 'rm -rf "$root/work" "$root/pristine" "$root/spark-local"' EXIT
fi
drv=$repo/bench/peers
go build -o "$root/floe" ./cmd/floe
go build -o "$root/applybench" ./bench/cmd/applybench
res=$root/results.txt
{
	echo "# $(date -u +%FT%TZ) $(uname -srm), $(nproc) cores, $(go env GOVERSION), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo "# SIZE=$size rows=$rows file_rows=$file_rows changes=$changes keys=$keys rounds=$rounds spark.driver.memory=$mem"
	echo "# engines: $("$py" -c 'import json,sys; v=json.load(open(sys.argv[1]))["versions"]; print("pyspark", v["pyspark"], v["iceberg-spark-runtime"], "pyiceberg", v["pyiceberg"])' "$manifest")"
	echo "# load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$res"

f() { "$root/floe" --warehouse "$root/work" --quiet "$@"; }
fresh() { # the pristine warehouse at $root/work (files hard-linked: no engine writes a file in place)
	rm -rf "$root/work"
	cp -al "$root/pristine" "$root/work"
	rm -f "$root/work"/catalog.db*
	cp "$root/pristine"/catalog.db* "$root/work/"
}
mode() { # mode TABLE copy-on-write|merge-on-read
	f table properties set "bench.$1" "write.merge.mode=$2" "write.update.mode=$2" "write.delete.mode=$2" >/dev/null
}
check() { # check TABLE: rows and md5 of the table's sorted CSV rows, read by floe
	local tmp=$root/check.csv n
	f table scan "bench.$1" --format csv >"$tmp"
	n=$(($(wc -l <"$tmp") - 1))
	echo "$n:$(tail -n +2 "$tmp" | LC_ALL=C sort | md5sum | cut -c1-12)"
	rm -f "$tmp"
}
field() { "$py" "$drv/tools.py" field "$1" <"$2"; }
record() { # record SCENARIO ENGINE ROUND SECONDS E2E PEAK CHECK
	echo "R $*" >>"$res"
	printf '%-10s %-9s round %s: %6.2f s  e2e %-6s  peak %6.0f MiB  %s\n' "$1" "$2" "$3" "$4" "$5" "$6" "$7" >&2
}

if [[ ! -f "$root/pristine/catalog.db" ]]; then
	rm -rf "$root/work" "$root/pristine"
	nice "$root/applybench" -phase build -warehouse "$root/work" -layout flat -rows "$rows" -file-rows "$file_rows" 2>&1 | tail -n 1 | tee -a "$res"
	for t in t_v2 t_v3; do mode "$t" copy-on-write; done
	"$root/applybench" -phase changes -warehouse "$root/work" -layout flat -keys "$keys" -rows "$rows" -file-rows "$file_rows" \
		-changes "$changes" -changes-file "$root/changes.arrow" 2>&1 | tail -n 1 | tee -a "$res"
	"$py" "$drv/tools.py" parquet "$root/changes.arrow" "$root/changes.parquet"
	mv "$root/work" "$root/pristine"
fi
echo "# warehouse $(du -sh "$root/pristine" | cut -f1), changes $(du -h "$root/changes.parquet" | cut -f1)" | tee -a "$res"

# The changelog's table: the pristine t_v2 after a copy-on-write update of 1% of its rows, made on a
# fresh copy before each round's changelog runs (read-only, so the engines share it); the metadata holds
# absolute paths, so it stays at $root/work.
fresh
start=$("$root/floe" --warehouse "$root/work" --quiet table snapshots bench.t_v2 --format jsonl | tail -1 | sed -n 's/.*"snapshot_id":\([0-9]*\).*/\1/p')
[[ -n "$start" ]] || { echo "bench/peers.sh: no snapshot id in floe table snapshots bench.t_v2" >&2; exit 1; }
changelog_table() {
	fresh
	f table update bench.t_v2 --set "score = score + 1" --where "id % 100 = 7" >/dev/null
}

run() { # run SCENARIO ENGINE ROUND
	local sc=$1 e=$2 r=$3 t=t_v2 out=$root/out.txt s0 s1 wall
	[[ $sc == mor-dv ]] && t=t_v3
	if [[ $sc == changelog ]]; then
		case $e in
		floe)
			/usr/bin/time -f '%e %M' -o "$root/time.txt" "$root/floe" --warehouse "$root/work" --quiet changelog bench.t_v2 \
				--start-snapshot-id "$start" --key id --format parquet --output "$root/cl.parquet" >"$out" 2>&1 || { tail -5 "$out" >&2; return 1; }
			read -r wall kb <"$root/time.txt"
			record "$sc" floe "$r" "$wall" - "$((kb / 1024))" "$("$py" "$drv/tools.py" clsum "$root/cl.parquet" | tr -d ' ')"
			;;
		spark)
			s0=$(date +%s%N)
			(cd "$drv" && "$py" spark.py changelog "$root/work" bench.t_v2 "$start" "$jars" "$mem") >"$out" 2>"$root/spark.log" || { tail -20 "$root/spark.log" >&2; return 1; }
			s1=$(date +%s%N)
			record "$sc" spark "$r" "$(field statement_s "$out")" "$(awk -v a="$(field start_s "$out")" -v b="$(field statement_s "$out")" 'BEGIN{printf "%.1f", a+b}')" \
				"$(field peak_rss_mib "$out")" "$(field rows "$out")"
			;;
		esac
		return
	fi
	fresh
	[[ $sc == mor-* ]] && mode "$t" merge-on-read
	case $e in
	floe)
		local dm=()
		[[ $sc == mor-* ]] && dm=(--delete-mode position)
		/usr/bin/time -f '%e %M' -o "$root/time.txt" "$root/floe" --warehouse "$root/work" --quiet apply "bench.$t" \
			--changes "$root/changes.parquet" --key id "${dm[@]}" >"$out" 2>&1 || { tail -5 "$out" >&2; return 1; }
		read -r wall kb <"$root/time.txt"
		record "$sc" floe "$r" "$wall" - "$((kb / 1024))" "$(check "$t")"
		;;
	spark)
		(cd "$drv" && "$py" spark.py merge "$root/work" "bench.$t" "$root/changes.parquet" "$jars" "$mem") >"$out" 2>"$root/spark.log" || { tail -20 "$root/spark.log" >&2; return 1; }
		record "$sc" spark "$r" "$(field statement_s "$out")" "$(awk -v a="$(field start_s "$out")" -v b="$(field statement_s "$out")" 'BEGIN{printf "%.1f", a+b}')" \
			"$(field peak_rss_mib "$out")" "$(check "$t")"
		;;
	pyiceberg)
		[[ $sc == cow ]] || return 0
		(cd "$drv" && "$py" pyiceberg_upsert.py "$root/work" "bench.$t" "$root/changes.parquet") >"$out" 2>"$root/py.log" || { tail -20 "$root/py.log" >&2; return 1; }
		record "$sc" pyiceberg "$r" "$(field statement_s "$out")" - "$(field peak_rss_mib "$out")" "$(check "$t")"
		;;
	esac
}

for r in $(seq 1 "$rounds"); do
	order=$engines
	((r % 2 == 0)) && order=$(echo "$engines" | tr ' ' '\n' | tac | tr '\n' ' ')
	echo "## round $r ($order), load average $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$res" >&2
	for sc in $scenarios; do
		[[ $sc == changelog ]] && changelog_table
		for e in $order; do
			run "$sc" "$e" "$r"
		done
	done
done
echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$res"
"$py" "$drv/tools.py" summary "$res" | tee "$root/summary.md"
echo "# results in $res" >&2
