#!/usr/bin/env bash
# The reliability suite behind `make chaos`: every chaos scenario (the soak
# included) and the hostile-input table with the race detector, then 60 s of
# fuzzing per target (internal/spec's, and internal/assemble's reader of
# chapter PDFs); RELIABILITY.md is generated from the
# run by internal/testing/chaos/reliability, never written by hand. Logs stay in
# var/chaos. Exits non-zero when any part failed (the report is still
# written when the summary exists).
set -uo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
FUZZ_TIME=${FUZZ_TIME:-60s}
# Minimizing a new input is not counted in execs and, for a chapter PDF of
# 16 KB, can take the whole fuzz time: bound it, so the time fuzzes.
FUZZ_MINIMIZE_TIME=${FUZZ_MINIMIZE_TIME:-10s}
FUZZ_TARGETS=(internal/spec:FuzzDecode internal/spec:FuzzValidateURL internal/spec:FuzzArtifactKey internal/assemble:FuzzInspect)
out=var/chaos
mkdir -p "$out"
rm -f "$out/summary.json" "$out"/fuzz-*.log

start=$(date +%s)
rc=0
chaos_cmd=("$GO" test -race -count=1 -timeout 40m -v ./internal/testing/chaos/)
echo "PDFEXPORT_CHAOS=full ${chaos_cmd[*]}  (log: $out/chaos.log)"
PDFEXPORT_CHAOS=full PDFEXPORT_CHAOS_SUMMARY="$PWD/$out/summary.json" "${chaos_cmd[@]}" >"$out/chaos.log" 2>&1 || rc=1
grep -E '^(--- |ok |FAIL)|: passed (true|false) in' "$out/chaos.log"

# The renderer's leak check at soak length (make test runs 150 renders).
leak_cmd=("$GO" test -race -count=1 -timeout 20m -run '^TestRender_NoLeaksOverManyRenders$' -v ./internal/render/)
echo "RENDER_LEAK_RENDERS=1000 ${leak_cmd[*]}  (log: $out/render-leak.log)"
RENDER_LEAK_RENDERS=1000 "${leak_cmd[@]}" >"$out/render-leak.log" 2>&1 || rc=1
grep -E '^(--- |ok |FAIL)' "$out/render-leak.log"

for pkg_target in "${FUZZ_TARGETS[@]}"; do
	pkg=${pkg_target%%:*} target=${pkg_target#*:}
	fuzz_cmd=("$GO" test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZ_TIME" -fuzzminimizetime "$FUZZ_MINIMIZE_TIME" "./$pkg")
	echo "${fuzz_cmd[*]}"
	"${fuzz_cmd[@]}" >"$out/fuzz-$target.log" 2>&1 || rc=1
	tail -n 2 "$out/fuzz-$target.log"
done

"$GO" run ./internal/testing/chaos/reliability -summary "$out/summary.json" -fuzz-dir "$out" -wall $(($(date +%s) - start)) \
	-command "make chaos   # = scripts/chaos.sh: PDFEXPORT_CHAOS=full ${chaos_cmd[*]}; then per package:target in ${FUZZ_TARGETS[*]}: $GO test -run '^\$' -fuzz '^<Target>\$' -fuzztime $FUZZ_TIME -fuzzminimizetime $FUZZ_MINIMIZE_TIME ./<package>" \
	-out RELIABILITY.md || rc=1
exit $rc
