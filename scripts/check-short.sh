#!/usr/bin/env bash
# go test -short starts no server, browser or binary build (make lint).
# Every program a test could start for that (redis-server, Chromium, the S3
# server, Node, `go build`) is put first on PATH as a stub that records
# its start and exits 1; the harness refuses to start anything under
# -short (harness.ErrShort). The check fails if a stub was started or a
# test failed.
set -euo pipefail
cd "$(dirname "$0")/.."

go_bin="$(command -v "${GO:-go}")"
stubs="$(mktemp -d)"
trap 'rm -rf "$stubs"' EXIT
record="$stubs/started"
: >"$record"
for prog in redis-server redis-cli redis-sentinel chromium chromium-browser chromium-headless-shell \
	chrome-headless-shell google-chrome versitygw node npm npx qpdf-server; do
	printf '#!/bin/sh\necho "%s $*" >>"%s"\nexit 1\n' "$prog" "$record" >"$stubs/$prog"
	chmod +x "$stubs/$prog"
done
# go itself stays usable (go list, go env), but builds nothing.
cat >"$stubs/go" <<STUB
#!/bin/sh
case "\$1" in build | install | run | test) echo "go \$*" >>"$record"; exit 1 ;; esac
exec "$go_bin" "\$@"
STUB
chmod +x "$stubs/go"

status=0
for m in . "$@"; do
	(cd "$m" && PATH="$stubs:$PATH" CHROMIUM_PATH= PDFEXPORT_VERSITYGW="$stubs/versitygw" \
		"$go_bin" test -short -count=1 ./...) >"$stubs/out" 2>&1 || {
		cat "$stubs/out"
		echo "check-short: go test -short failed in $m" >&2
		status=1
	}
done
if [ -s "$record" ]; then
	echo "check-short: go test -short started these programs:" >&2
	sort -u "$record" >&2
	status=1
fi
exit $status
