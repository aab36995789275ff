#!/usr/bin/env bash
# The interoperability suite, for .ci/run: install the pinned engines (idempotent: a no-op when
# they are already in $HOME/.cache/floe), then run the interop tests against them.
# FLOE_INTEROP_REQUIRED makes a missing engine a failure instead of a skip, so CI can never pass
# by skipping. Budget: about a minute to install cold, a few minutes for the suite; keep the whole
# under 20 minutes on a quiet machine (size random runs with FLOE_INTEROP_ROWS); the test timeout
# leaves room for a loaded one (12 min at load 2-5, past 30 min at load 14).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash .ci/engines.sh
FLOE_INTEROP_REQUIRED=1 go test -tags interop -count=1 -timeout 50m ./interop/...
