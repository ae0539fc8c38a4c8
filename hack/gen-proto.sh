#!/usr/bin/env bash
# Regenerates the Go code of probelet's own gRPC API (api/) byte for byte:
# protoc from Debian (its version is stamped into the output, so it is
# checked), protoc-gen-go at go.mod's google.golang.org/protobuf version and
# a pinned protoc-gen-go-grpc, installed into a cache dir keyed by version.
set -euo pipefail
cd "$(dirname "$0")/.."

PROTOC_VERSION="3.21.12"          # Debian bookworm's protobuf-compiler
PROTOC_GEN_GO_GRPC_VERSION="v1.6.2"
PROTOC_GEN_GO_VERSION="$(go list -m -f '{{.Version}}' google.golang.org/protobuf)"

# protoc and the well-known types (google/protobuf/*.proto).
if ! command -v protoc >/dev/null || [ ! -f /usr/include/google/protobuf/timestamp.proto ]; then
	if [ "$(id -u)" -ne 0 ]; then
		echo "gen-proto: protoc missing; install protobuf-compiler libprotobuf-dev (as root)" >&2
		exit 1
	fi
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends protobuf-compiler libprotobuf-dev
fi
have="$(protoc --version | awk '{print $2}')"
if [ "$have" != "$PROTOC_VERSION" ]; then
	echo "gen-proto: protoc $have found, $PROTOC_VERSION wanted (its version is written into the output)" >&2
	exit 1
fi

tools="${XDG_CACHE_HOME:-$HOME/.cache}/probelet/protoc-gen-${PROTOC_GEN_GO_VERSION}-grpc-${PROTOC_GEN_GO_GRPC_VERSION}"
if [ ! -x "$tools/protoc-gen-go" ] || [ ! -x "$tools/protoc-gen-go-grpc" ]; then
	mkdir -p "$tools"
	GOBIN="$tools" GOFLAGS=-mod=mod go install "google.golang.org/protobuf/cmd/protoc-gen-go@${PROTOC_GEN_GO_VERSION}"
	GOBIN="$tools" GOFLAGS=-mod=mod go install "google.golang.org/grpc/cmd/protoc-gen-go-grpc@${PROTOC_GEN_GO_GRPC_VERSION}"
fi

for proto in api/*/*.proto; do
	PATH="$tools:$PATH" protoc \
		-I . -I /usr/include \
		--go_out=. --go_opt=paths=source_relative \
		--go-grpc_out=. --go-grpc_opt=paths=source_relative \
		"$proto"
	echo "gen-proto: generated from $proto"
done
