#!/usr/bin/env bash
# Words that do not belong in the tree (make lint):
# - references to the project's tracker (the word issue or ticket and a
#   number): a comment, a doc or a benchmark row names the change or the
#   target itself, which stays true after the tracker moves on;
# - measured figures in production comments ("766 MiB resident", "p50 of
#   9.8 ms", "2.3 CPU-seconds"): they go stale with the next change. They
#   live in BENCHMARKS.md and docs/CAPACITY.md, and the code says why and
#   points there. Tests, benchmarks and the bench program may carry them.
#   So with ratios ("1.3x the bare tab", "0.82×", "25 times its size") and
#   section numbers of BENCHMARKS.md ("BENCHMARKS.md section 7", "section
#   7G of BENCHMARKS"): the sections are renumbered as the runs change. A
#   plain pointer ("the figures are in BENCHMARKS.md") stays true;
# - history in production comments ("as before", "the earlier design"): the
#   code says why it is as it is now; the change log is git's. An earlier
#   release a worker must still read is not history but a reason, and may be
#   named.
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
# Production Go code: the figure, ratio and history rules read its comments.
production=(-- '*.go' ':!*_test.go' ':!bench' ':!third_party' ':!internal/testing')
# A comment line of production Go code with a figure next to a word that
# marks a measurement: a unit of time, memory or CPU a run produced.
figure='//.*(\b(measured|p50|p95|p99|took)\b[^.]*\b[0-9]+(\.[0-9]+)? ?(ms|µs|s|MiB|KiB|GiB|%)([^A-Za-z0-9]|$)|\bmeasured:? (about )?[0-9]|[0-9] ?(MiB|KiB|GiB) resident|[0-9] ?CPU-s(econds)?\b)'
if figs=$(git grep -nIE "$figure" "${production[@]}"); then
	echo "$figs"
	echo "check-words: the comments above carry measured figures; put them in BENCHMARKS.md or docs/CAPACITY.md and point there" >&2
	status=1
fi
# A ratio: a decimal before x or × that is not one side of a size ("8.27 x
# 11.7 in"), a whole number before a comparison, or a number of times.
than='(the|as|of|faster|slower|more|less|fewer|longer|shorter|larger|smaller|bigger|cheaper|higher|lower)'
ratio="//.*([0-9]\.[0-9]+ ?(x|×)([^A-Za-z0-9 ]| [^0-9]|\$)|\b[0-9]+ ?(x|×) $than\b|[0-9] times $than\b|[0-9] times its\b)"
# A section of BENCHMARKS.md, or a bare section number unless the line names
# the standard the section is of.
sections='//.*(BENCHMARKS(\.md)?,? (section|scenario|§|table) ?[0-9]|(section|scenario|§) ?[0-9]+[A-Z]?(.s)? (of|in) (the )?BENCHMARKS)'
bare='//.*\b(section|scenario|§) ?[0-9]'
standard='\b(RFC|ISO|ECMA|W3C|IETF)\b'
found=$({
	git grep -nIE "$ratio" "${production[@]}" || true
	git grep -nIE "$sections" "${production[@]}" || true
	git grep -nIE "$bare" "${production[@]}" | grep -vE "$standard" || true
} | sort -u)
if [ -n "$found" ]; then
	echo "$found"
	echo "check-words: the comments above carry ratios or BENCHMARKS.md section numbers; point to BENCHMARKS.md without them" >&2
	status=1
fi
history='//.*\b(as before|(earlier|previous|former|old|original) (design|implementation|approach|code path|scheme))\b'
if hist=$(git grep -nIiE "$history" "${production[@]}"); then
	echo "$hist"
	echo "check-words: the comments above tell the code's history; say why the code is as it is" >&2
	status=1
fi
exit $status
