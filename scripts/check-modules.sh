#!/usr/bin/env bash
# make lint: each module (the root and the nested ones named as arguments)
# is tidy: its go.mod and go.sum are what `go mod tidy` makes of its code,
# so a requirement a nested module's tests need never creeps back into the
# root go.mod unnoticed, and none is missing. Prints the diff. Not offline:
# tidy reads the go.mod of the tests of every dependency, which a fresh
# module cache (a clean CI machine) does not hold; -diff changes no file.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
rc=0
for m in "$@"; do
	if ! diff=$(cd "$m" && GOFLAGS=-mod=mod "$GO" mod tidy -diff 2>&1); then
		echo "check-modules: $m/go.mod is not tidy (run: cd $m && go mod tidy):" >&2
		echo "$diff" >&2
		rc=1
	fi
done
[[ $rc == 0 ]] && echo "check-modules: $* tidy"
exit $rc
