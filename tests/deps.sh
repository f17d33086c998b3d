#!/bin/sh
# Installs the Debian packages corral needs to build and test (or, given as
# arguments, other ones: tests/compat/deps.sh), when run as root or with
# sudo; otherwise prints the exact command to run.
set -eu
pkgs="gcc make pkg-config libseccomp-dev libunwind-dev libcjson-dev libcap-dev \
libarchive-dev nettle-dev libcurl4-openssl-dev openssl python3 util-linux procps \
coreutils tar gzip curl git iproute2 nodejs"
[ $# -gt 0 ] && pkgs="$*"
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "corral: missing Debian packages:$missing"
if [ "$(id -u)" -eq 0 ]; then
	apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $missing
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
	sudo apt-get update && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y $missing
elif command -v sudo >/dev/null 2>&1; then
	sudo sh -c "apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $missing"
else
	echo "run as root: apt-get update && apt-get install -y$missing" >&2
	exit 1
fi
