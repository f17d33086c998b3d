#!/bin/sh
# Installs the Debian packages `make compat` runs (real suites and tools), when
# run as root or with sudo; otherwise prints the exact command to run.
set -eu
pkgs="libpython3.11-testsuite python3-pytest python3-venv python3-pip \
python3-setuptools python3-wheel perl ruby nodejs cmake git sqlite3 procps \
bsdutils util-linux make gcc"
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "compat: missing Debian packages:$missing"
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
