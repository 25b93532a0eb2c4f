#!/usr/bin/env bash
# Installs what pdfexport needs to build, test and demo, only where missing:
# redis-server, Chromium (the headless shell the worker prefers, and the full
# browser the tests also cover), fonts, poppler-utils, qpdf (the document
# options' tests check every output with it) and promtool (Debian's
# prometheus package: the tests check deployments/prometheus with it) and
# Node.js (nodejs, npm) and the docs generators the source.site tests build
# sites with (mkdocs, python3-sphinx) and Python's own Sphinx documentation
# (python3.11-doc, the benchmark's manual of short chapters) from apt, the pinned versitygw S3 server (built with
# go install into ./bin) and the pinned Node tools of the HTTP contract
# checks (npm ci into var/node-tools). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
have_cmd() { command -v "$1" >/dev/null 2>&1; }
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

have_cmd redis-server || missing+=(redis-server)
{ [ -x /usr/lib/chromium/chromium-headless-shell ] || have_cmd chromium-headless-shell || have_cmd chrome-headless-shell; } || missing+=(chromium-headless-shell)
{ [ -x /usr/lib/chromium/chromium ] || have_cmd chromium || have_cmd chromium-browser || have_cmd google-chrome; } || missing+=(chromium)
have_cmd pdfinfo || missing+=(poppler-utils)
have_cmd qpdf || missing+=(qpdf)
have_cmd promtool || missing+=(prometheus)
have_cmd node || missing+=(nodejs)
# The Node.js API docs: real manual pages the manual tests and benchmark print.
[ -f /usr/share/doc/nodejs/api/all.html ] || missing+=(nodejs)
have_cmd npm || missing+=(npm)
# Docs generators whose real output the source.site tests build and read.
have_cmd mkdocs || missing+=(mkdocs)
have_cmd sphinx-build || missing+=(python3-sphinx)
# Python's documentation, a real Sphinx build: the benchmark's manual of
# short chapters (its tutorial).
[ -f /usr/share/doc/python3.11/html/tutorial/index.html ] || missing+=(python3.11-doc)
for font in fonts-dejavu-core fonts-liberation; do
	have_pkg "$font" || missing+=("$font")
done

if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" -eq 0 ] && have_cmd apt-get; then
		echo "setup: installing ${missing[*]} with apt-get"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	elif have_cmd sudo && have_cmd apt-get; then
		echo "setup: installing ${missing[*]} with sudo apt-get"
		sudo apt-get update -qq
		sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
		sudo=sudo
	else
		echo "setup: missing ${missing[*]}." >&2
		echo "setup: install them with: apt-get install -y ${missing[*]}  (or your platform's equivalent)" >&2
		exit 1
	fi
	# prometheus is installed for promtool only: where the package started its
	# server (systemd), stop and disable it; it would hold :9090, the worker's
	# default ADMIN_ADDR port.
	if [[ " ${missing[*]} " == *" prometheus "* ]] && have_cmd systemctl && systemctl is-enabled --quiet prometheus 2>/dev/null; then
		echo "setup: stopping the prometheus service the package started (only promtool is needed)"
		${sudo:-} systemctl disable --now prometheus >/dev/null 2>&1 || true
	fi
fi

if ! have_cmd go; then
	echo "setup: Go 1.26 or newer is required (https://go.dev/doc/install); not found on PATH" >&2
	exit 1
fi

if [ -x scripts/install-versitygw.sh ]; then
	scripts/install-versitygw.sh
fi
scripts/install-node-tools.sh
echo "setup: ok (redis-server $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p'), $( { /usr/lib/chromium/chromium --version 2>/dev/null || chromium --version; } | head -1), headless shell $( { /usr/lib/chromium/chromium-headless-shell --version 2>/dev/null || chromium-headless-shell --version; } | head -1 | awk '{print $NF}'), promtool $(promtool --version 2>&1 | awk 'NR == 1 {print $3}'), node $(node --version))"
