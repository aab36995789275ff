#!/usr/bin/env bash
# Applying changes: 1M changes (half UPDATE_AFTER, a quarter INSERT, a
# quarter DELETE) into a 10M-row table in each delete mode, with peak RSS,
# against a plain append of the same rows. Builds bench/cmd/applybench,
# builds each layout's warehouse once (flat: unpartitioned; daily:
# partitioned by day(created)), keeps a pristine copy, writes the change
# rows of each key distribution once to an Arrow IPC file (every run
# streams them from it, as floe apply reads a file), and then runs ROUNDS
# rounds, each measurement in its own process on a fresh copy of the
# warehouse. Within a round, every layout and key distribution runs the
# modes (baseline, equality, position, dv, cow; merge-cow, merge-position
# and merge-dv run MERGE INTO with the same rows as source); the order is
# reversed every other round. Summarised by bench/cmd/benchratio (PAIRS,
# default equality/baseline goal 1.5, position/baseline and dv/baseline
# goal 2).
#
#   bench/applybench.sh [ROUNDS]                 # default 3
#   ROWS=1000000 FILE_ROWS=100000 CHANGES=100000 bench/applybench.sh 1   # a smaller run
#   LAYOUTS=flat KEYS=uniform MODES='equality baseline' bench/applybench.sh 3
#   ROOT=/path OUT=/path bench/applybench.sh     # where warehouses and results go
#   MEMORY_BUDGET=268435456 bench/applybench.sh  # merge.WithMemoryBudget (default: floe's)
#   TIMEV=1 bench/applybench.sh                  # also /usr/bin/time -v of each apply process
#                                                # (whole-process peak RSS) into OUT/time-v.txt
#
# Disk: about 2 x 1.2 GB per layout at 10M rows (a pristine copy and a
# working copy, hard-linked where files are never rewritten); removed at
# the end unless KEEP=1.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
rows=${ROWS:-10000000}
file_rows=${FILE_ROWS:-1000000}
changes=${CHANGES:-1000000}
layouts=${LAYOUTS:-flat daily}
keys=${KEYS:-clustered uniform}
modes=${MODES:-baseline equality position dv cow}
pairs=${PAIRS:-equality/baseline:1.5,position/baseline:2,dv/baseline:2}
budget=${MEMORY_BUDGET:-0}
root=${ROOT:-$(mktemp -d "${TMPDIR:-/tmp}/floe-applybench.XXXXXX")}
out=${OUT:-$root/results}
mkdir -p "$root/work" "$root/pristine" "$out"
if [[ "${KEEP:-0}" != 1 ]]; then
	trap 'rm -rf "$root/work" "$root/pristine" "$root"/changes-*.arrow' EXIT
fi
bin=$root/applybench
go build -o "$bin" ./bench/cmd/applybench
go build -o "$root/benchratio" ./bench/cmd/benchratio
size=(-rows "$rows" -file-rows "$file_rows")
{
	echo "# $(date -u +%FT%TZ) $(uname -srm), $(nproc) cores, $(go env GOVERSION), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo "# rows=$rows file_rows=$file_rows changes=$changes rounds=$rounds layouts='$layouts' keys='$keys' modes='$modes' memory_budget=$budget GOGC=${GOGC:-100} GOMEMLIMIT=${GOMEMLIMIT:-off}"
	echo "# load average before the build: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$out/machine.txt"

# fresh LAYOUT: a working copy of the pristine warehouse at the path the
# tables were built at. Data, delete and metadata files are never written
# in place, so they are hard links; the SQLite catalog is copied.
fresh() {
	rm -rf "$root/work/$1"
	cp -al "$root/pristine/$1" "$root/work/$1"
	rm -f "$root/work/$1"/catalog.db*
	cp "$root/pristine/$1"/catalog.db* "$root/work/$1/"
}

for l in $layouts; do
	if [[ ! -d "$root/pristine/$l" ]]; then
		"$bin" -phase build -warehouse "$root/work/$l" -layout "$l" "${size[@]}" 2>&1 | tail -n 1 | tee -a "$out/machine.txt"
		cp -a "$root/work/$l" "$root/pristine/$l"
		echo "# $l warehouse: $(du -sh "$root/pristine/$l" | cut -f1)" | tee -a "$out/machine.txt"
	fi
done

for k in $keys; do
	if [[ ! -f "$root/changes-$k-$changes.arrow" ]]; then
		l=${layouts%% *}
		fresh "$l"
		"$bin" -phase changes -warehouse "$root/work/$l" -layout "$l" -keys "$k" "${size[@]}" -changes "$changes" -changes-file "$root/changes-$k-$changes.arrow" 2>&1 | tail -n 1 | tee -a "$out/machine.txt"
	fi
done

for r in $(seq 1 "$rounds"); do
	order=$modes
	if ((r % 2 == 0)); then
		order=$(echo "$modes" | tr ' ' '\n' | tac | tr '\n' ' ')
	fi
	echo "## round $r ($order), load average $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/machine.txt" >&2
	: > "$out/round-$r.txt"
	for l in $layouts; do
		for k in $keys; do
			for m in $order; do
				fresh "$l"
				echo "# $l/$k/$m load average $(cut -d' ' -f1-3 /proc/loadavg)" >> "$out/round-$r.txt"
				timev=()
				if [[ "${TIMEV:-0}" == 1 ]]; then
					echo "# $l/$k/$m round $r" >> "$out/time-v.txt"
					timev=(/usr/bin/time -a -o "$out/time-v.txt" -v)
				fi
				"${timev[@]}" "$bin" -phase apply -warehouse "$root/work/$l" -layout "$l" -keys "$k" -mode "$m" "${size[@]}" -changes "$changes" \
					-changes-file "$root/changes-$k-$changes.arrow" -memory-budget "$budget" \
					| tee -a "$out/round-$r.txt" >&2
			done
		done
	done
done
echo "# load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$out/machine.txt"
"$root/benchratio" -pairs "$pairs" "$out"/round-*.txt | tee "$out/summary.md"
echo "# rounds and summary in $out" >&2
