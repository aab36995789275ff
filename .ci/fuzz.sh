#!/usr/bin/env bash
# Runs every fuzz target of the repository for a short time (FLOE_FUZZTIME,
# default 12s each; about 13 targets, so under 4 minutes once the
# instrumented build is cached). Each target's committed corpus
# (testdata/fuzz/<target>/) always runs as part of go test ./...; this adds
# new random inputs. A failure leaves the input in testdata/fuzz/<target>/
# and exits non-zero: fix the bug and keep the input as a regression case.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
fuzztime="${FLOE_FUZZTIME:-12s}"

targets=(
  "./rowfile FuzzJSONLines"
  "./rowfile FuzzCSV"
  "./expr FuzzParse"
  "./expr FuzzParseMerge"
  "./expr FuzzParseAssignments"
  "./expr FuzzDatetimePattern"
  "./delta FuzzCommit"
  "./delta FuzzCheckpoint"
  "./delta FuzzDeletionVector"
  "./delta FuzzZ85"
  "./delta FuzzSchemaString"
  "./ddl FuzzParseSchema"
  "./ddl FuzzParsePartitionSpec"
  "./pipeline FuzzParse"
)

# Every Fuzz function of the repository must be in the list above.
listed=$(printf '%s\n' "${targets[@]}" | awk '{print $2}' | sort)
found=$(git grep -h -o '^func Fuzz[A-Za-z0-9_]*' -- '*_test.go' | sed 's/^func //' | sort)
if [ "$listed" != "$found" ]; then
  echo "fuzz targets in the code and in .ci/fuzz.sh differ:"
  diff <(echo "$listed") <(echo "$found") || true
  exit 1
fi

for t in "${targets[@]}"; do
  read -r pkg name <<<"$t"
  echo "--- $pkg $name ($fuzztime)"
  go test "$pkg" -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime 5s -parallel 2
done
