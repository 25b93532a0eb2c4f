#!/usr/bin/env bash
# make lint: third_party/asynq must be upstream asynq, at the version go.mod
# requires, plus third_party/asynq-idle-wait.patch, and nothing else. Upstream
# comes from the Go module proxy into the module cache. Left out of the copy,
# as third_party/README.md says: tests, docs, CI files and the test-only
# packages.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
module=github.com/hibiken/asynq
version=$($GO list -m -f '{{.Version}}' "$module")
work=$(mktemp -d)
trap 'chmod -R u+w "$work"; rm -rf "$work"' EXIT
# Outside this module, so go.mod's replace does not apply.
upstream=$(cd "$work" && GOFLAGS=-mod=mod $GO mod download -json "$module@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
if [[ -z "$upstream" || ! -d "$upstream" ]]; then
	echo "check-vendored: could not download $module@$version" >&2
	exit 1
fi
mkdir "$work/expected"
(cd "$upstream" && find . -type f \
	! -name '*_test.go' ! -name '*.md' ! -name Makefile ! -name .gitignore \
	! -path './.github/*' ! -path './docs/*' ! -path './internal/testbroker/*' ! -path './internal/testutil/*' -print0) |
	while IFS= read -r -d '' f; do
		mkdir -p "$work/expected/$(dirname "$f")"
		cp "$upstream/$f" "$work/expected/$f"
	done
chmod -R u+w "$work/expected"
if ! (cd "$work/expected" && patch -p1 --batch --forward --silent) <third_party/asynq-idle-wait.patch; then
	echo "check-vendored: third_party/asynq-idle-wait.patch does not apply to $module@$version" >&2
	exit 1
fi
if ! diff -r "$work/expected" third_party/asynq >"$work/diff"; then
	echo "check-vendored: third_party/asynq is not $module@$version plus third_party/asynq-idle-wait.patch:" >&2
	head -50 "$work/diff" >&2
	echo "(make the change in the patch, or see third_party/README.md to move to a new asynq)" >&2
	exit 1
fi
echo "check-vendored: third_party/asynq = $module@$version + asynq-idle-wait.patch"
