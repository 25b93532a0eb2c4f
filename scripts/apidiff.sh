#!/usr/bin/env bash
# make lint's semver check of exportclient, the public Go package: the pinned
# apidiff (golang.org/x/exp/cmd/apidiff, in ./bin) compares its API at the
# release named in exportclient/API_BASE with the working tree's. An
# incompatible change fails, unless internal/platform/buildinfo's Release has moved to
# a new major version since that release (in v0.x, a new minor: semver's
# rule for 0.y.z, docs/RELEASES.md). Exits non-zero naming each incompatible
# change.
set -euo pipefail
cd "$(dirname "$0")/.."

APIDIFF=$(realpath "${APIDIFF:-bin/apidiff}")
PKG=github.com/pdfexport/pdfexport/exportclient
read -r base_version base_commit < <(grep -v '^#' exportclient/API_BASE)
release=$(sed -n 's/^const Release = "\(v[^"]*\)"$/\1/p' internal/platform/buildinfo/buildinfo.go)
[[ -n $base_version && -n $base_commit && -n $release ]] || { echo "apidiff: cannot read exportclient/API_BASE or buildinfo.Release" >&2; exit 2; }

git cat-file -e "$base_commit^{commit}" 2>/dev/null || {
	echo "apidiff: exportclient/API_BASE names commit $base_commit ($base_version), which this clone lacks (shallow? git fetch --unshallow)" >&2
	exit 2
}
# The base tree in a fixed folder, so the build cache serves it next time.
base=var/apidiff/$base_commit
if [[ ! -f $base/go.mod ]]; then
	rm -rf "$base" && mkdir -p "$base"
	git archive "$base_commit" | tar -x -C "$base"
fi
(cd "$base" && "$APIDIFF" -w api.export "$PKG")
"$APIDIFF" -w var/apidiff/head.export "$PKG"
incompatible=$("$APIDIFF" -incompatible "$base/api.export" var/apidiff/head.export)
[[ -z $incompatible ]] && exit 0

# major.minor of each: a break is allowed once the release is a new major
# (v1+) or a new minor (v0.x).
level() { local v=${1#v}; local major=${v%%.*} rest=${v#*.}; [[ $major == 0 ]] && echo "0.${rest%%.*}" || echo "$major"; }
if [[ $(level "$release") != $(level "$base_version") ]]; then
	echo "apidiff: exportclient changes incompatibly since $base_version; allowed, as $release is a new $( [[ $(level "$release") == 0.* ]] && echo minor || echo major ) version (say so in CHANGELOG.md):"
	echo "$incompatible"
	exit 0
fi
echo "apidiff: exportclient changes incompatibly since $base_version ($base_commit), and $release is not a new $( [[ $(level "$release") == 0.* ]] && echo "minor (v0.x)" || echo major ) version:" >&2
echo "$incompatible" >&2
echo "Keep the old API (add, do not change), or release a new version: bump CHANGELOG.md, buildinfo.Release and .goreleaser.yaml." >&2
exit 1
