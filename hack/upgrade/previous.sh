#!/usr/bin/env bash
# previous.sh: the release the upgrade tests start from (the commit in
# hack/upgrade/PREVIOUS), taken from this repository's history: its tree
# unpacked (git archive; the checkout is not touched) and its OCI image
# built by its own hack/image/build.sh for this machine's platform, both
# cached by commit and image name under the test bed's cache.
#
# usage: previous.sh --name REF
# Prints commit=, src= (the unpacked tree: its deploy/ is what the tests
# install) and image= (the OCI layout tarball).
set -euo pipefail
UPGRADE_HACK=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$UPGRADE_HACK/../.." && pwd)
# shellcheck source=../lib/cache.sh
. "$UPGRADE_HACK/../lib/cache.sh"

die() { printf 'previous: %s\n' "$*" >&2; exit 1; }

NAME=
while [ $# -gt 0 ]; do
	case $1 in
	--name) NAME=$2; shift 2 ;;
	*) die "usage: previous.sh --name REF" ;;
	esac
done
[ -n "$NAME" ] || die "usage: previous.sh --name REF"

COMMIT=$(grep -v '^#' "$UPGRADE_HACK/PREVIOUS" | tr -d '[:space:]')
git -C "$REPO" cat-file -e "$COMMIT^{commit}" 2>/dev/null ||
	die "commit $COMMIT (hack/upgrade/PREVIOUS) is not in $REPO's history: a shallow clone? (git fetch --unshallow)"

DIR=$TESTBED_CACHE/probelet-previous@$COMMIT
IMAGE=$DIR/$(printf '%s' "$NAME" | tr -c 'A-Za-z0-9._-' '_').oci.tar
cache_lock "probelet-previous.lock"
if [ ! -f "$DIR/src/.done" ]; then
	rm -rf "$DIR/src"
	mkdir -p "$DIR/src"
	git -C "$REPO" archive "$COMMIT" | tar -x -C "$DIR/src"
	touch "$DIR/src/.done"
fi
if [ ! -f "$IMAGE" ]; then
	printf 'previous: building %s at %s\n' "$NAME" "${COMMIT:0:12}" >&2
	"$DIR/src/hack/image/build.sh" --out "$IMAGE.tmp" --name "$NAME" --version "${COMMIT:0:12}" \
		--platforms "$(go env GOARCH)" >&2
	mv "$IMAGE.tmp" "$IMAGE"
fi
printf 'commit=%s\nsrc=%s\nimage=%s\n' "$COMMIT" "$DIR/src" "$IMAGE"
