#!/usr/bin/env bash
# Installs Debian's chromium for the status page test (pipeline/web), only
# when /usr/bin/chromium is missing:
#
#   bash .ci/browser.sh
#
# The package comes from the distribution's own repository (apt-get), so its
# version is the one the distribution pins; nothing is downloaded from
# elsewhere. Runs as root, or through sudo when it is there.
set -euo pipefail

log() { printf 'browser: %s\n' "$*" >&2; }

if [ -x /usr/bin/chromium ]; then
	log "$(/usr/bin/chromium --version 2>/dev/null || echo chromium) already installed"
	exit 0
fi
as_root=()
if [ "$(id -u)" != 0 ]; then
	command -v sudo >/dev/null || { log "need root or sudo to install chromium"; exit 1; }
	as_root=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
for i in 1 2 3; do
	if "${as_root[@]}" apt-get update -qq && "${as_root[@]}" apt-get install -y -qq --no-install-recommends chromium; then
		break
	fi
	if [ "$i" = 3 ]; then
		log "apt-get install chromium failed 3 times"
		exit 1
	fi
	log "apt-get failed, retrying in $((i * 10))s"
	sleep $((i * 10))
done
[ -x /usr/bin/chromium ] || { log "chromium installed but /usr/bin/chromium is missing"; exit 1; }
log "installed $(/usr/bin/chromium --version 2>/dev/null)"
