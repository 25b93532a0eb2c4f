#!/usr/bin/env bash
# Builds the pinned versitygw S3 server (the tests' real S3) into ./bin.
# Idempotent: does nothing when bin/versitygw already is that version.
# versitygw's own --version prints "git" for a `go install` build, so the
# module version is read from the binary's build info (go version -m).
set -euo pipefail
cd "$(dirname "$0")/.."

VERSITYGW_VERSION="${VERSITYGW_VERSION:-v1.8.0}"
bin="bin/versitygw"

installed_version() {
	go version -m "$1" 2>/dev/null | awk '$1 == "mod" && $2 == "github.com/versity/versitygw" { print $3; exit }'
}

if [ -x "$bin" ] && [ "$(installed_version "$bin")" = "$VERSITYGW_VERSION" ]; then
	exit 0
fi
if ! command -v go >/dev/null 2>&1; then
	echo "install-versitygw: Go is required to build versitygw $VERSITYGW_VERSION" >&2
	exit 1
fi
echo "install-versitygw: building versitygw $VERSITYGW_VERSION into $bin (about 2 minutes the first time)"
mkdir -p bin
GOBIN="$PWD/bin" GOFLAGS= go install "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION"
got="$(installed_version "$bin")"
if [ "$got" != "$VERSITYGW_VERSION" ]; then
	echo "install-versitygw: $bin reports version '${got:-unknown}', want $VERSITYGW_VERSION" >&2
	exit 1
fi
