#!/usr/bin/env bash
# make lint's known-vulnerability check, offline: the pinned govulncheck
# against the Go vulnerability database of the pinned golang.org/x/vulndb
# module (served by the Go module proxy like any module), converted to the
# database format govulncheck reads by that module's own indexdb. Nothing
# else is fetched: govulncheck reads the database from var/vulndb.
#
# Fails when the code calls a vulnerable function of a module go.mod
# requires (bump it: go get MODULE@FIXED). Vulnerabilities of the standard
# library are fixed by a newer Go, which go.mod cannot bring here (the
# machine's Go is the one in force): they are printed as a warning naming
# the Go release that fixes them, and do not fail.
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
VULNDB_VERSION=${VULNDB_VERSION:?set by the Makefile}
db=var/vulndb/$VULNDB_VERSION
if [[ ! -f $db/index/modules.json ]]; then
	src=$("$GO" mod download -json "golang.org/x/vulndb@$VULNDB_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
	[[ -d $src/data/osv ]] || { echo "vulncheck: golang.org/x/vulndb@$VULNDB_VERSION has no data/osv" >&2; exit 2; }
	rm -rf "$db" && mkdir -p "$(dirname "$db")"
	bin/indexdb -vulns "$src/data/osv" -out "$db.tmp" && mv "$db.tmp" "$db"
fi

# Each module named as an argument (default: the root), in its directory:
# the nested modules' code and requirements are checked like the root's.
check() {
	local dir=$1 root=$PWD rc=0 out modules stdlib fixed_go flags=()
	# A nested module is tests only: without -test there is nothing to scan.
	[[ $dir != . ]] && flags=(-test)
	out=$(cd "$dir" && GOPROXY=off "$root/bin/govulncheck" "${flags[@]}" -db "file://$root/$db" ./... 2>&1) || rc=$?
	case $rc in
	0) echo "govulncheck $dir: no known vulnerability is called (database: golang.org/x/vulndb@$VULNDB_VERSION)"; return 0 ;;
	3) ;;
	*) echo "$out" >&2; echo "vulncheck $dir: govulncheck failed (exit $rc)" >&2; return "$rc" ;;
	esac
	# Exit 3: some vulnerability is called. Which kind, per block of the
	# symbol results ("Vulnerability #N: GO-…" … "  Module: PATH" or
	# "  Standard library").
	modules=$(awk '/^=== Package Results|^=== Module Results/{exit} /^Vulnerability #/{id=$3} /^  Module: /{print id" "$2}' <<<"$out")
	stdlib=$(awk '/^=== Package Results|^=== Module Results/{exit} /^Vulnerability #/{id=$3} /^  Standard library/{print id}' <<<"$out" | sort -u)
	fixed_go=$(grep -o 'Fixed in: [a-z/0-9]*@go[0-9.]*' <<<"$out" | sed 's/.*@//' | sort -uV | tail -n 1)
	if [[ -n $modules ]]; then
		echo "$out" >&2
		echo "vulncheck $dir: the code calls vulnerable functions of required modules (bump them with go get MODULE@FIXED):" >&2
		echo "$modules" >&2
		return 1
	fi
	echo "govulncheck $dir: warning: $(wc -l <<<"$stdlib") vulnerabilities of the standard library $("$GO" env GOVERSION) are called, fixed in $fixed_go (a newer Go): $(tr '\n' ' ' <<<"$stdlib")"
}

status=0
for dir in "${@:-.}"; do
	check "$dir" || status=1
done
exit $status
