#!/usr/bin/env bash
# Words that do not belong in the tree (make lint):
# - references to the project's tracker (the word issue or ticket and a
#   number): a comment, a doc or a benchmark row names the change or the
#   target itself, which stays true after the tracker moves on;
# - measured figures in production comments ("766 MiB resident", "p50 of
#   9.8 ms", "2.3 CPU-seconds"): they go stale with the next change. They
#   live in BENCHMARKS.md and docs/CAPACITY.md, and the code says why and
#   points there. Tests, benchmarks and the bench program may carry them.
set -euo pipefail
# The tree is the repository the script is in, or $1 (its test gives a
# scratch repository).
cd "${1:-$(dirname "$0")/..}"

status=0
if refs=$(git grep -nIE '\b([Ii]ssue|[Tt]icket)s? #?[0-9]+' -- . ':!third_party'); then
	echo "$refs"
	echo "check-words: the lines above name a tracker's issue or ticket; say what the change or the target is instead" >&2
	status=1
fi
# A comment line of production Go code with a figure next to a word that
# marks a measurement: a unit of time, memory or CPU a run produced.
figure='//.*(\b(measured|p50|p95|p99|took)\b[^.]*\b[0-9]+(\.[0-9]+)? ?(ms|µs|s|MiB|KiB|GiB|%)([^A-Za-z0-9]|$)|\bmeasured:? (about )?[0-9]|[0-9] ?(MiB|KiB|GiB) resident|[0-9] ?CPU-s(econds)?\b)'
if figs=$(git grep -nIE "$figure" -- '*.go' ':!*_test.go' ':!bench' ':!third_party' ':!internal/testing'); then
	echo "$figs"
	echo "check-words: the comments above carry measured figures; put them in BENCHMARKS.md or docs/CAPACITY.md and point there" >&2
	status=1
fi
exit $status
