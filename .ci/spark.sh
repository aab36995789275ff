#!/usr/bin/env bash
# Runs a command with a local Spark Connect server up, for the tests of floe's Spark push-down
# (package sparkpush, the interop differential suite):
#
#   bash .ci/spark.sh go test -tags interop -run Spark ./sparkpush/...
#   bash .ci/spark.sh            start the server, print FLOE_SPARK_REMOTE, wait for Ctrl-C
#
# The server is the pinned pyspark's (interop/pins) bundled Spark Connect server jar, started with
# spark-submit from the interop venv, with the Iceberg runtime, sqlite-jdbc and Delta jars of
# $HOME/.cache/floe/jars/<hash>/spark on its classpath, bound to 127.0.0.1 on a free port. The
# engines are installed by .ci/engines.sh when missing (a no-op when they are there). The command
# runs with FLOE_SPARK_REMOTE=sc://127.0.0.1:PORT and FLOE_SPARK_REQUIRED=1 (a test that needs
# Spark and does not find it fails instead of skipping); the server is stopped when the command
# ends, however it ends (trap on EXIT, INT and TERM). Catalogs are not configured at start: each
# floe session mounts its own (see docs/spark.md).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${FLOE_CACHE:-$HOME/.cache/floe}

log() { printf 'spark: %s\n' "$*" >&2; }
die() { printf 'spark: error: %s\n' "$*" >&2; exit 1; }

bash "$ROOT/.ci/engines.sh" >/dev/null
PINHASH=$(cat "$ROOT/interop/pins/requirements.txt" "$ROOT/interop/pins/constraints.txt" "$ROOT/interop/pins/pom.xml" | sha256sum | cut -c1-16)
MANIFEST="$CACHE/interop-$PINHASH.json"
[[ -f "$MANIFEST" ]] || die "no engines manifest $MANIFEST (run .ci/engines.sh)"

# python, java_home and the jars from the manifest, one per line.
mapfile -t M < <(python3 -c '
import json, sys
m = json.load(open(sys.argv[1]))
print(m["python"]); print(m["java_home"]); print(",".join(m["spark_jars"]))
' "$MANIFEST")
PY=${M[0]}
export JAVA_HOME=${M[1]}
JARS=${M[2]}
SPARK_HOME=$("$PY" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')
export SPARK_HOME
CONNECT_JAR=$(ls "$SPARK_HOME"/jars/spark-connect_*.jar 2>/dev/null | head -n1)
[[ -n "$CONNECT_JAR" ]] || die "no spark-connect jar in $SPARK_HOME/jars"

PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
WORK=$(mktemp -d "${TMPDIR:-/tmp}/floe-spark-connect.XXXXXX")
LOG="$WORK/server.log"
mkdir -p "$WORK/local"

export SPARK_LOCAL_IP=127.0.0.1
# setsid: the server and its JVM get their own process group, stopped as one.
setsid "$SPARK_HOME/bin/spark-submit" \
	--master 'local[2]' \
	--class org.apache.spark.sql.connect.service.SparkConnectServer \
	--jars "$JARS" \
	--driver-memory "${FLOE_SPARK_DRIVER_MEMORY:-2g}" \
	--conf spark.connect.grpc.binding.address=127.0.0.1 \
	--conf spark.connect.grpc.binding.port="$PORT" \
	--conf spark.driver.host=127.0.0.1 \
	--conf spark.driver.bindAddress=127.0.0.1 \
	--conf spark.ui.enabled=false \
	--conf spark.ui.showConsoleProgress=false \
	--conf spark.sql.shuffle.partitions=2 \
	--conf spark.default.parallelism=2 \
	--conf spark.sql.session.timeZone=UTC \
	--conf "spark.driver.extraJavaOptions=-Duser.timezone=UTC -Dderby.system.home=$WORK" \
	--conf spark.sql.extensions=org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions,io.delta.sql.DeltaSparkSessionExtension \
	--conf spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog \
	--conf spark.sql.catalogImplementation=in-memory \
	--conf spark.sql.warehouse.dir="$WORK/spark-warehouse" \
	--conf spark.local.dir="$WORK/local" \
	"$CONNECT_JAR" >"$LOG" 2>&1 &
PID=$!

stop() {
	local rc=$?
	if kill -0 "$PID" 2>/dev/null; then
		kill -TERM -- "-$PID" 2>/dev/null || true
		for _ in $(seq 1 50); do kill -0 "$PID" 2>/dev/null || break; sleep 0.2; done
		kill -KILL -- "-$PID" 2>/dev/null || true
	fi
	wait "$PID" 2>/dev/null || true
	rm -rf "$WORK"
	exit "$rc"
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

for _ in $(seq 1 600); do
	if ! kill -0 "$PID" 2>/dev/null; then
		tail -n 40 "$LOG" >&2
		die "the Spark Connect server exited before opening port $PORT"
	fi
	if python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1).close()' "$PORT" 2>/dev/null; then
		break
	fi
	sleep 0.2
done
python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1).close()' "$PORT" 2>/dev/null ||
	{ tail -n 40 "$LOG" >&2; die "the Spark Connect server did not open port $PORT in 2 minutes"; }

export FLOE_SPARK_REMOTE="sc://127.0.0.1:$PORT"
export FLOE_SPARK_REQUIRED=1
export FLOE_SPARK_SERVER_LOG="$LOG"
log "Spark Connect server at $FLOE_SPARK_REMOTE (pid $PID, log $LOG)"
if [[ $# -eq 0 ]]; then
	echo "FLOE_SPARK_REMOTE=$FLOE_SPARK_REMOTE"
	wait "$PID"
else
	"$@"
fi
