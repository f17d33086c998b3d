#!/bin/sh
# Installs the Debian packages `make compat` runs (real suites and tools),
# through the project's installer (as root or with sudo).
exec sh "$(dirname "$0")/../deps.sh" libpython3.11-testsuite python3-pytest \
	python3-venv python3-pip python3-setuptools python3-wheel perl ruby \
	nodejs cmake git sqlite3 procps bsdutils util-linux make gcc
