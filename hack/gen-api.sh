#!/usr/bin/env bash
# Regenerates the probe-state API's generated code: the deep copies of its
# types (api/probes/v1alpha1/zz_generated.deepcopy.go, deepcopy-gen) and
# their OpenAPI definitions with those of the apimachinery types they use
# (api/probes/openapi/zz_generated.openapi.go, openapi-gen), at the
# releases go.mod names.
set -euo pipefail
cd "$(dirname "$0")/.."
k8s="$(go list -m -f '{{.Version}}' k8s.io/apimachinery)"
openapi="$(go list -m -f '{{.Version}}' k8s.io/kube-openapi)"
header="$(mktemp)"
trap 'rm -f "$header"' EXIT
: >"$header" # the generators write their own "Code generated" line
GOFLAGS= go run "k8s.io/code-generator/cmd/deepcopy-gen@$k8s" \
	--go-header-file "$header" --output-file zz_generated.deepcopy.go ./api/probes/v1alpha1
GOFLAGS= go run "k8s.io/kube-openapi/cmd/openapi-gen@$openapi" \
	--go-header-file "$header" --output-file zz_generated.openapi.go \
	--output-dir api/probes/openapi --output-pkg github.com/probelet/probelet/api/probes/openapi \
	--report-filename /dev/null \
	./api/probes/v1alpha1 k8s.io/apimachinery/pkg/apis/meta/v1 k8s.io/apimachinery/pkg/runtime k8s.io/apimachinery/pkg/version
echo "gen-api: generated the probe-state API's deep copies and OpenAPI definitions"
