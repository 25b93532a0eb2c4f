#!/usr/bin/env bash
# Installs the pinned Node tools of the HTTP contract checks
# (api/client-check/package.json and its package-lock.json: openapi-typescript,
# openapi-fetch, typescript, @redocly/cli, standardwebhooks) into
# var/node-tools with npm ci. Idempotent and cheap: nothing happens when
# var/node-tools was installed from the same lockfile. Needs Node >= 20.19
# and npm (make setup installs Debian's nodejs where node is missing).
set -euo pipefail
cd "$(dirname "$0")/.."

src=api/client-check
dst=var/node-tools

for cmd in node npm; do
	if ! command -v "$cmd" >/dev/null 2>&1; then
		echo "install-node-tools: $cmd not found; install Node.js 20.19 or newer (make setup does, where apt-get is available)" >&2
		exit 1
	fi
done
if ! node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 20 || (a === 20 && b >= 19) ? 0 : 1)'; then
	echo "install-node-tools: Node.js $(node --version) is too old; @redocly/cli needs 20.19 or newer" >&2
	exit 1
fi

mkdir -p "$dst"
exec 9>"$dst/.lock"
flock 9 # go test runs packages in parallel: one install at a time
want="$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -d' ' -f1)"
if [ -f "$dst/.installed" ] && [ "$(cat "$dst/.installed")" = "$want" ] && [ -d "$dst/node_modules" ]; then
	exit 0
fi
echo "install-node-tools: npm ci into $dst (pinned by $src/package-lock.json)"
cp "$src/package.json" "$src/package-lock.json" "$dst/"
(cd "$dst" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
echo "$want" >"$dst/.installed"
