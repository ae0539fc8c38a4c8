# probelet — build, test and demo entry points. Everything a fresh machine
# needs is installed by the targets themselves (see hack/).

GO          ?= go
GOFLAGS     ?=
BIN         := bin
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS     := -X github.com/probelet/probelet/internal/version.Version=$(VERSION)
FUZZTIME    ?= 10s
# The OCI image `make image` writes (hack/image/build.sh), its name (the
# io.containerd.image.name a `ctr images import` uses) and platforms.
IMAGE_OUT       ?= $(BIN)/image/probelet.oci.tar
IMAGE_NAME      ?= localhost/probelet/probelet:$(VERSION)
IMAGE_PLATFORMS ?= amd64,arm64
# DEMO_DIR is where `make demo` keeps its containerd test bed.
DEMO_DIR    ?= /tmp/probelet-demo

export GOTOOLCHAIN := local

.PHONY: all build image image-reproducible test testbed unit vm fuzz e2e lint bench generate demo demo-down clean

all: build

## build: compile bin/probelet, bin/probectl and bin/probelet-nri-install
build:
	@mkdir -p $(BIN)
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/probelet ./cmd/probelet
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/probectl ./cmd/probectl
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/probelet-nri-install ./cmd/probelet-nri-install

## image: probelet's OCI image (probelet, probectl, probelet-nri-install;
## amd64 and arm64 in one index) as an OCI layout tarball in $(IMAGE_OUT),
## built without a container engine; prints its digest. Reproducible: the
## same sources, Go and VERSION give the same digest
image:
	hack/image/build.sh --out $(IMAGE_OUT) --name $(IMAGE_NAME) --version $(VERSION) --platforms $(IMAGE_PLATFORMS)

## image-reproducible: builds the image twice, the second time from a copy
## of the tree at another path with an empty Go build cache, and fails
## unless the digests match (compiles everything again: minutes)
image-reproducible:
	hack/image/reproducible.sh --name $(IMAGE_NAME) --version $(VERSION) --platforms $(IMAGE_PLATFORMS)

## test: lint, unit and integration tests with the race detector, the
## image built twice (the second time from a cold cache) to the same
## digest, (as root) the eBPF kernel tests in a Linux 6.1 VM, a short fuzz
## run, and (as root) the e2e suite on a real containerd test bed
test: lint testbed unit image-reproducible vm fuzz e2e

## testbed: build the containerd test bed's binaries and images, and the
## control plane and kubelet (hack/cluster, ~10-13 min cold), into the cache
## (root only; the unit tests that drive the real crictl and containerd use it)
testbed:
	@if [ "$$(id -u)" -eq 0 ]; then hack/testbed/build.sh >/dev/null && hack/testbed/images.sh >/dev/null && hack/cluster/build.sh >/dev/null; \
	elif [ -n "$$CI" ]; then echo "testbed: CI needs root to build the containerd test bed" >&2; exit 1; \
	else echo "testbed: not root, skipping the test bed build (tests that need it skip too)"; fi

unit:
	$(GO) test -race -count=1 ./...

## vm: the eBPF packages' kernel tests inside a VM booting Debian 12's Linux
## 6.1 (QEMU/TCG, about 2 minutes; root only, in CI it fails loudly when it
## cannot run)
vm:
	hack/vm/run.sh

fuzz:
	$(GO) test -run='^$$' -fuzz=FuzzParse -fuzztime=$(FUZZTIME) ./prober/spec

## e2e: the suite on a real containerd built by hack/testbed (root only;
## in CI it fails loudly when it cannot run)
e2e:
	hack/e2e.sh

## lint: gofmt check, go vet and staticcheck (installed by hack/tools.sh),
## with and without the e2e build tag
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags e2e ./...
	@sc=$$(hack/tools.sh staticcheck) && $$sc ./... && $$sc -tags e2e ./...

## bench: engine, eBPF and CRI benchmarks, side by side
bench:
	hack/bench.sh

## generate: regenerate bpf2go objects and protobuf code (installs clang, protoc, ...)
generate:
	hack/gen-ebpf.sh
	hack/gen-proto.sh

## demo: build everything, start a containerd test bed and probelet, run the demo pod
demo: build
	hack/demo.sh up $(DEMO_DIR)

## demo-down: stop the demo's probelet and test bed
demo-down:
	hack/demo.sh down $(DEMO_DIR)

clean:
	rm -rf $(BIN)
