#!/usr/bin/env bash
# Regenerates the deep copies of the probe-state API's types
# (api/probes/v1alpha1/zz_generated.deepcopy.go) with deepcopy-gen at the
# release of go.mod's k8s.io modules.
set -euo pipefail
cd "$(dirname "$0")/.."
version="$(go list -m -f '{{.Version}}' k8s.io/apimachinery)"
header="$(mktemp)"
trap 'rm -f "$header"' EXIT
: >"$header" # deepcopy-gen writes its own "Code generated" line
GOFLAGS= go run "k8s.io/code-generator/cmd/deepcopy-gen@$version" \
	--go-header-file "$header" --output-file zz_generated.deepcopy.go ./api/probes/v1alpha1
echo "gen-deepcopy: generated api/probes/v1alpha1/zz_generated.deepcopy.go"
