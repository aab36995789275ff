#!/usr/bin/env bash
# Installs the pinned reference engines for floe's interoperability suite (interop/).
#
#   bash .ci/engines.sh          install what is missing, then print where everything is
#
# Pins live in interop/pins/: requirements.txt and constraints.txt (PyPI: pyspark, delta-spark,
# pyiceberg, deltalake and every transitive package) and pom.xml (Maven Central: Iceberg's Spark
# runtime, the SQLite JDBC driver, Delta for Spark 4.1, Iceberg's REST catalog server).
# Everything goes under ${FLOE_CACHE:-$HOME/.cache/floe}:
#
#   venv-<hash>/                 Python venv   (hash of requirements, constraints and Python version)
#   jars/<hash>/spark/*.jar      Spark classpath (hash of pom.xml)
#   jars/<hash>/rest/*.jar       runnable REST catalog server
#   m2/                          Maven's local repository for these downloads
#   interop-<hash>.json          manifest read by the Go harness (hash of the three pin files)
#
# Idempotent and safe to rerun: each part is installed only when its marker file is missing, the
# marker is written only after the part installed and verified, a half-installed part is removed
# and redone, downloads are retried, and concurrent runs are serialised by a lock file.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PINS="$ROOT/interop/pins"
CACHE=${FLOE_CACHE:-$HOME/.cache/floe}
PYTHON=${FLOE_PYTHON:-python3}
MARKER=.floe-installed

log() { printf 'engines: %s\n' "$*" >&2; }
die() { printf 'engines: error: %s\n' "$*" >&2; exit 1; }

# retry N CMD... runs CMD up to N times, waiting a little longer after each failure.
retry() {
	local n=$1 i=1
	shift
	until "$@"; do
		if ((i >= n)); then
			log "giving up after $n attempts: $*"
			return 1
		fi
		log "attempt $i of $n failed, retrying in $((i * 10))s: $1 ..."
		sleep $((i * 10))
		i=$((i + 1))
	done
}

hash16() { sha256sum | cut -c1-16; }

for f in requirements.txt constraints.txt pom.xml; do
	[[ -f "$PINS/$f" ]] || die "missing pin file $PINS/$f"
done
command -v "$PYTHON" >/dev/null || die "$PYTHON not found (set FLOE_PYTHON to a Python 3.10+ interpreter)"
command -v mvn >/dev/null || die "mvn not found: Maven fetches the pinned jars (apt-get install maven)"
"$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' ||
	die "$PYTHON is $("$PYTHON" -V 2>&1); the engines need Python 3.10 or newer"

if [[ -n "${JAVA_HOME:-}" ]]; then
	JAVA="$JAVA_HOME/bin/java"
else
	JAVA=$(readlink -f "$(command -v java || true)" || true)
fi
[[ -x "$JAVA" ]] || die "java not found (Spark 4.1 and Iceberg 1.11 need Java 17 or newer)"
JAVA_MAJOR=$("$JAVA" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')
[[ "${JAVA_MAJOR:-0}" -ge 17 ]] || die "$JAVA is Java ${JAVA_MAJOR:-?}; Spark 4.1 and Iceberg 1.11 need 17 or newer"
JAVA_HOME_DIR=$(dirname "$(dirname "$JAVA")")

PYVER=$("$PYTHON" -c 'import sys; print(sys.version.split()[0])')
PYHASH=$({ cat "$PINS/requirements.txt" "$PINS/constraints.txt"; echo "python $PYVER"; } | hash16)
JARHASH=$(hash16 <"$PINS/pom.xml")
PINHASH=$(cat "$PINS/requirements.txt" "$PINS/constraints.txt" "$PINS/pom.xml" | hash16)
VENV="$CACHE/venv-$PYHASH"
JARS="$CACHE/jars/$JARHASH"
MANIFEST="$CACHE/interop-$PINHASH.json"

mkdir -p "$CACHE/jars"
exec 9>"$CACHE/.engines.lock"
flock 9

install_venv() {
	if [[ -f "$VENV/$MARKER" ]]; then
		log "python venv up to date: $VENV"
		return
	fi
	log "installing the python engines into $VENV"
	rm -rf "$VENV"
	"$PYTHON" -m venv "$VENV"
	retry 3 "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --retries 5 \
		-r "$PINS/requirements.txt" -c "$PINS/constraints.txt"
	# Verify: the pinned engines import and report the pinned versions.
	"$VENV/bin/python" - "$PINS/requirements.txt" <<'PY'
import importlib.metadata as md, re, sys
want = {}
for line in open(sys.argv[1]):
    line = line.split("#", 1)[0].strip()
    m = re.match(r"^([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?==([^\s;]+)$", line)
    if m:
        want[m.group(1)] = m.group(2)
bad = [f"{n} {md.version(n)} (want {v})" for n, v in want.items() if md.version(n) != v]
if bad:
    sys.exit("version mismatch: " + ", ".join(bad))
import pyspark, pyiceberg, deltalake, delta, pyarrow, sqlalchemy  # noqa: F401
PY
	touch "$VENV/$MARKER"
}

# fetch_jars DIR copies the pinned jars into DIR/spark and DIR/rest. Maven's log goes to
# $CACHE/maven.log and is shown only when Maven fails.
fetch_jars() {
	# -C: fail on a checksum mismatch instead of keeping a corrupt download.
	if ! mvn -B -C -f "$PINS/pom.xml" \
		-Dmaven.repo.local="$CACHE/m2" \
		-Dfloe.jars="$1" \
		dependency:copy-dependencies@spark dependency:copy@rest >"$CACHE/maven.log" 2>&1; then
		tail -n 40 "$CACHE/maven.log" >&2
		return 1
	fi
}

install_jars() {
	if [[ -f "$JARS/$MARKER" ]]; then
		log "jars up to date: $JARS"
		return
	fi
	log "fetching the pinned jars into $JARS"
	local tmp="$JARS.tmp.$$"
	rm -rf "$JARS" "$tmp"
	retry 3 fetch_jars "$tmp"
	local n
	n=$(find "$tmp/spark" -name '*.jar' | wc -l)
	[[ "$n" -ge 3 ]] || die "expected Spark jars in $tmp/spark, found $n"
	[[ -n "$(find "$tmp/spark" -name 'iceberg-spark-runtime-*.jar')" ]] || die "iceberg-spark-runtime missing from $tmp/spark"
	[[ -n "$(find "$tmp/spark" -name 'sqlite-jdbc-*.jar')" ]] || die "sqlite-jdbc missing from $tmp/spark"
	[[ -n "$(find "$tmp/spark" -name 'delta-spark_*.jar')" ]] || die "delta-spark missing from $tmp/spark"
	[[ -n "$(find "$tmp/rest" -name 'iceberg-rest-server-*.jar')" ]] || die "REST server jar missing from $tmp/rest"
	mv "$tmp" "$JARS"
	touch "$JARS/$MARKER"
}

install_venv
install_jars

# The manifest tells the Go harness where everything is; it is written last, atomically.
"$VENV/bin/python" - "$MANIFEST" "$VENV" "$JARS" "$JAVA_HOME_DIR" "$PINHASH" <<'PY'
import glob, importlib.metadata as md, json, os, re, sys
manifest, venv, jars, java_home, pinhash = sys.argv[1:]
def jarver(pattern):
    found = sorted(glob.glob(os.path.join(jars, pattern)))
    return os.path.basename(found[0]) if found else None
m = {
    "pins": pinhash,
    "python": os.path.join(venv, "bin", "python"),
    "java_home": java_home,
    "spark_jars": sorted(glob.glob(os.path.join(jars, "spark", "*.jar"))),
    "rest_jar": sorted(glob.glob(os.path.join(jars, "rest", "*.jar")))[0],
    "versions": {
        "pyspark": md.version("pyspark"),
        "delta-spark": md.version("delta-spark"),
        "pyiceberg": md.version("pyiceberg"),
        "deltalake": md.version("deltalake"),
        "pyarrow": md.version("pyarrow"),
        "iceberg-spark-runtime": jarver("spark/iceberg-spark-runtime-*.jar"),
        "delta-spark-jar": jarver("spark/delta-spark_*.jar"),
        "sqlite-jdbc": jarver("spark/sqlite-jdbc-*.jar"),
        "iceberg-rest-server": jarver("rest/iceberg-rest-server-*.jar"),
    },
}
tmp = manifest + ".tmp"
with open(tmp, "w") as f:
    json.dump(m, f, indent=2)
    f.write("\n")
os.replace(tmp, manifest)
PY
log "ready: $MANIFEST"
