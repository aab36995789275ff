#!/usr/bin/env bash
# Installs the pinned object storage servers floe's storage tests run against:
#
#   bash .ci/storage.sh          install what is missing, then print where everything is
#
#   s3proxy 3.1.0 (Maven Central org.gaul:s3proxy, jar-with-dependencies): an S3 API on a
#       local folder (jclouds filesystem backend), started by internal/objstoretest
#   fake-gcs-server v1.56.1 (Go module github.com/fsouza/fake-gcs-server): a GCS JSON API
#       emulator, built with go install
#   Azurite 3.35.0 (npm package azurite): an Azure Blob Storage emulator on Node.js, installed
#       with npm install --prefix; 3.35.0 is the newest that declares support for Node 20
#   faketime (Debian package): runs s3proxy with a skewed clock
#
# Everything goes under ${FLOE_CACHE:-$HOME/.cache/floe}/storage/. Each part is installed only
# when it is missing, into a temporary name first and then moved into place, so a half-done
# install is redone; concurrent runs are serialised by a lock file. The tests find the servers
# at those paths (or at $FLOE_S3PROXY_JAR, $FLOE_FAKE_GCS_SERVER and $FLOE_AZURITE) and skip when they are
# absent, unless FLOE_STORAGE_REQUIRED=1.
set -euo pipefail

S3PROXY_VERSION=3.1.0
FAKE_GCS_VERSION=v1.56.1
AZURITE_VERSION=3.35.0

CACHE=${FLOE_CACHE:-$HOME/.cache/floe}
DIR="$CACHE/storage"
S3PROXY_JAR="$DIR/s3proxy-$S3PROXY_VERSION/s3proxy-$S3PROXY_VERSION-jar-with-dependencies.jar"
FAKE_GCS="$DIR/fake-gcs-server-$FAKE_GCS_VERSION/fake-gcs-server"
AZURITE="$DIR/azurite-$AZURITE_VERSION/node_modules/azurite/dist/src/blob/main.js"

log() { printf 'storage: %s\n' "$*" >&2; }
die() { printf 'storage: error: %s\n' "$*" >&2; exit 1; }

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

mkdir -p "$DIR"
exec 8>"$DIR/.storage.lock"
flock 8

fetch_s3proxy() {
	local tmp=$1
	mvn -B -q -C dependency:copy \
		-Dmaven.repo.local="$CACHE/m2" \
		-Dartifact="org.gaul:s3proxy:$S3PROXY_VERSION:jar:jar-with-dependencies" \
		-DoutputDirectory="$tmp" >"$DIR/maven.log" 2>&1 || { tail -n 30 "$DIR/maven.log" >&2; return 1; }
}

install_s3proxy() {
	if [[ -f "$S3PROXY_JAR" ]]; then
		log "s3proxy $S3PROXY_VERSION up to date: $S3PROXY_JAR"
		return
	fi
	command -v mvn >/dev/null || die "mvn not found: Maven fetches s3proxy (apt-get install maven)"
	command -v java >/dev/null || die "java not found: s3proxy needs Java 17 or newer"
	log "fetching s3proxy $S3PROXY_VERSION"
	local final tmp
	final=$(dirname "$S3PROXY_JAR")
	tmp="$final.tmp.$$"
	rm -rf "$tmp"
	retry 3 fetch_s3proxy "$tmp"
	[[ -f "$tmp/$(basename "$S3PROXY_JAR")" ]] || die "s3proxy jar missing after download (see $DIR/maven.log)"
	rm -rf "$final"
	mv "$tmp" "$final"
}

install_fake_gcs() {
	if [[ -x "$FAKE_GCS" ]]; then
		log "fake-gcs-server $FAKE_GCS_VERSION up to date: $FAKE_GCS"
		return
	fi
	command -v go >/dev/null || die "go not found: fake-gcs-server is built with go install"
	log "building fake-gcs-server $FAKE_GCS_VERSION (go install)"
	local final tmp
	final=$(dirname "$FAKE_GCS")
	tmp="$final.tmp.$$"
	rm -rf "$tmp"
	mkdir -p "$tmp"
	# GOFLAGS from the caller (for example -mod=vendor) must not leak into a foreign module.
	retry 2 env GOFLAGS=-buildvcs=false GOBIN="$tmp" CGO_ENABLED=0 \
		go install "github.com/fsouza/fake-gcs-server@$FAKE_GCS_VERSION"
	[[ -x "$tmp/fake-gcs-server" ]] || die "fake-gcs-server missing after go install"
	rm -rf "$final"
	mv "$tmp" "$final"
}

install_azurite() {
	if [[ -f "$AZURITE" ]]; then
		log "Azurite $AZURITE_VERSION up to date: $AZURITE"
		return
	fi
	command -v node >/dev/null || die "node not found: Azurite runs on Node.js (apt-get install nodejs npm)"
	command -v npm >/dev/null || die "npm not found: Azurite is installed with npm (apt-get install npm)"
	log "installing Azurite $AZURITE_VERSION (npm)"
	local final tmp
	final="$DIR/azurite-$AZURITE_VERSION"
	tmp="$final.tmp.$$"
	rm -rf "$tmp"
	mkdir -p "$tmp"
	# --ignore-scripts: nothing Azurite's blob service needs runs at install time.
	retry 2 npm install --prefix "$tmp" --no-audit --no-fund --ignore-scripts --no-save "azurite@$AZURITE_VERSION" >"$DIR/npm.log" 2>&1 ||
		{ tail -n 30 "$DIR/npm.log" >&2; die "npm install azurite@$AZURITE_VERSION failed (see $DIR/npm.log)"; }
	[[ -f "$tmp/node_modules/azurite/dist/src/blob/main.js" ]] || die "Azurite missing after npm install (see $DIR/npm.log)"
	rm -rf "$final"
	mv "$tmp" "$final"
}

# libfaketime runs s3proxy with a skewed clock for the clock skew test (Debian's package).
install_faketime() {
	if command -v faketime >/dev/null; then
		log "faketime up to date: $(command -v faketime)"
		return
	fi
	command -v apt-get >/dev/null || die "faketime not found and no apt-get to install it"
	log "installing faketime (apt-get)"
	apt-get install -y -q faketime >"$DIR/apt.log" 2>&1 ||
		{ apt-get update -q >>"$DIR/apt.log" 2>&1 && apt-get install -y -q faketime >>"$DIR/apt.log" 2>&1; } ||
		{ tail -n 20 "$DIR/apt.log" >&2; die "apt-get install faketime failed"; }
}

install_s3proxy
install_fake_gcs
install_azurite
install_faketime
log "ready: FLOE_S3PROXY_JAR=$S3PROXY_JAR FLOE_FAKE_GCS_SERVER=$FAKE_GCS FLOE_AZURITE=$AZURITE"
