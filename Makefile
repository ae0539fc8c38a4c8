# probelet — build, test and demo entry points. Everything a fresh machine
# needs is installed by the targets themselves (see hack/).

GO          ?= go
GOFLAGS     ?=
BIN         := bin
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS     := -X github.com/probelet/probelet/internal/version.Version=$(VERSION)
# BUILDTAGS are the image's (hack/image/build.sh): grpcnotrace leaves out
# grpc-go's x/net/trace, whose html/template made the linker keep every
# exported method (the agent 7 MiB larger on disk and in memory).
BUILDTAGS   := grpcnotrace
FUZZTIME    ?= 5s
# The OCI image `make image` writes (hack/image/build.sh), its name (the
# io.containerd.image.name a `ctr images import` uses) and platforms.
IMAGE_OUT       ?= $(BIN)/image/probelet.oci.tar
IMAGE_NAME      ?= localhost/probelet/probelet:$(VERSION)
IMAGE_PLATFORMS ?= amd64,arm64
# DEMO_DIR is where `make demo` keeps its containerd test bed,
# DEMO_CLUSTER_DIR where `make demo-cluster` keeps its control plane, beds and kubelets.
DEMO_DIR    ?= /tmp/probelet-demo
DEMO_CLUSTER_DIR ?= /tmp/pdc

export GOTOOLCHAIN := local

.PHONY: all build image image-reproducible test testbed unit vm fuzz e2e e2e-crio e2e-std e2e-kubelet-diff e2e-upgrade soak lint helm bench bench-scale generate demo demo-down demo-cluster demo-cluster-down clean

all: build

## build: compile bin/probelet, bin/probectl, bin/kubectl-probelet (the kubectl
## plugin), bin/probelet-nri-install,
## bin/probelet-controller and bin/probelet-exec (the static C helper of
## --exec-mode direct)
build:
	@mkdir -p $(BIN)
	$(GO) build -trimpath -tags '$(BUILDTAGS)' -ldflags '$(LDFLAGS)' -o $(BIN)/probelet ./cmd/probelet
	hack/build-exec-helper.sh $(BIN)/probelet-exec
	$(GO) build -trimpath -tags '$(BUILDTAGS)' -ldflags '$(LDFLAGS)' -o $(BIN)/probectl ./cmd/probectl
	$(GO) build -trimpath -tags '$(BUILDTAGS)' -ldflags '$(LDFLAGS)' -o $(BIN)/kubectl-probelet ./cmd/probectl/kubectl-probelet
	$(GO) build -trimpath -tags '$(BUILDTAGS)' -ldflags '$(LDFLAGS)' -o $(BIN)/probelet-nri-install ./cmd/probelet-nri-install
	$(GO) build -trimpath -tags '$(BUILDTAGS)' -ldflags '$(LDFLAGS)' -o $(BIN)/probelet-controller ./cmd/probelet-controller

## image: probelet's OCI image (probelet, probectl, probelet-nri-install, probelet-controller;
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
## image built twice (the second time from a cold cache; for this machine's
## platform, every platform with make image-reproducible) to the same
## digest, (as root) the eBPF kernel tests in VMs on a kernel matrix, a short fuzz
## run, and (as root) the e2e suite, the differential against the kubelet,
## the upgrades and restarts (e2e-upgrade) and the node-scale soak (110
## pods, 2 minutes with 10 chaos rounds, the density of make soak's 4 and
## 20) on a real containerd test bed, and the suite's core on a CRI-O test
## bed (e2e-crio); prints the time of each
## step (CI's budget: under 60 minutes on a 2-core machine)
test:
	@hack/steps.sh lint helm testbed unit "image-reproducible IMAGE_PLATFORMS=$$($(GO) env GOARCH)" vm fuzz "e2e E2E_VET=0" "e2e-crio E2E_VET=0" "e2e-kubelet-diff E2E_VET=0" "e2e-upgrade E2E_VET=0" "soak SOAK_DURATION=2m SOAK_CHAOS=10"

## testbed: build the test beds' binaries (containerd's, and CRI-O's, ~3 min
## cold) and images, and the control plane and kubelet (hack/cluster, ~10-13
## min cold), into the cache (root only; the unit tests that drive the real
## crictl and containerd use it)
testbed:
	@if [ "$$(id -u)" -eq 0 ]; then PROBELET_TESTBED_RUNTIME=crio hack/testbed/build.sh >/dev/null && hack/testbed/images.sh >/dev/null && hack/cluster/build.sh >/dev/null; \
	elif . hack/lib/ci.sh && ci_set; then echo "testbed: CI needs root to build the containerd test bed" >&2; exit 1; \
	else echo "testbed: not root, skipping the test bed build (tests that need it skip too)"; fi

unit:
	HELM=$$(hack/tools.sh helm) $(GO) test -race -count=1 ./...
	@# The engine's suite once more on the libraries' I/O and Go timers (--io=std).
	PROBELET_IO=std $(GO) test -race -count=1 ./prober/

## helm: helm lint (strict) and helm template of deploy/helm/probelet, in
## each agent mode (Helm built from the Go module proxy by hack/tools.sh;
## deploy/helm_test.go compares its renderings with kustomize's)
helm:
	@h=$$(hack/tools.sh helm) && $$h lint --strict deploy/helm/probelet && \
		$$h template probelet deploy/helm/probelet >/dev/null && \
		$$h template probelet deploy/helm/probelet --set agent.mode=preinstalled >/dev/null && \
		echo "helm: lint and template passed"

## vm: the eBPF packages' kernel tests inside VMs booting a matrix of
## Debian's cloud kernels (6.1, the newest 6.12 and 6.18, the newest served;
## QEMU/TCG, about 3 minutes; root only, in CI it fails loudly when it
## cannot run)
vm:
	hack/vm/run.sh

## fuzz: a short run of every fuzz target at probelet's boundaries: the
## probes annotation, NRI input through the plugin, requests to the socket,
## the config file and plugin configuration, the history file, port
## resolution, the exec helper's request decoder, the CRI proxy's frames,
## the admission webhook's pods, and the direct HTTP and gRPC clients held
## to net/http and grpc-go by differential fuzzers (FUZZTIME each; seeds and
## the corpus kept under each package's testdata/fuzz)
fuzz:
	GO=$(GO) FUZZTIME=$(FUZZTIME) hack/fuzz.sh FuzzParse ./probespec
	GO=$(GO) FUZZTIME=$(FUZZTIME) hack/fuzz.sh FuzzNRIEvents ./plugin
	GO=$(GO) FUZZTIME=$(FUZZTIME) hack/fuzz.sh FuzzSocketRequests ./cri/server
	GO=$(GO) FUZZTIME=$(FUZZTIME) hack/fuzz.sh FuzzConfig ./cmd/probelet/agent
	GO=$(GO) FUZZTIME=$(FUZZTIME) hack/fuzz.sh FuzzOpen ./history
	GO=$(GO) FUZZTIME=$(FUZZTIME) hack/fuzz.sh FuzzResolvePort ./probespec
	GO=$(GO) FUZZTIME=$(FUZZTIME) hack/fuzz.sh FuzzHelperRequest ./directexec
	GO=$(GO) FUZZTIME=$(FUZZTIME) hack/fuzz.sh FuzzProxyFrames ./cri/proxy
	GO=$(GO) FUZZTIME=$(FUZZTIME) hack/fuzz.sh FuzzMutate ./controller/webhook
	GO=$(GO) FUZZTIME=$(FUZZTIME) hack/fuzz.sh FuzzDirectAnswersAsNetHTTP ./prober/probe/httpprobe
	GO=$(GO) FUZZTIME=$(FUZZTIME) hack/fuzz.sh FuzzDirectAnswersAsGRPCGo ./prober/probe/grpcprobe

## e2e: the suite on a real containerd built by hack/testbed (root only;
## in CI it fails loudly when it cannot run). E2E_IO=std runs its agents on
## the libraries' I/O (--io=std) where a test does not choose; E2E_RUN picks
## tests (e2e-std: the probe tests so; the tenant tests pass so too:
## E2E_IO=std E2E_RUN=TestTenant make e2e)
E2E_IO ?=
E2E_SKIP ?= ^(TestKubeletDifferential|TestClusterUpgradeRollbackAndRestarts)$$
e2e:
	PROBELET_E2E_IO=$(E2E_IO) E2E_SKIP='$(E2E_SKIP)' hack/e2e.sh

## e2e-kubelet-diff: the differential e2e, alone (root; make test runs it
## as a step of its own after make e2e: beside the suite's parallel tests
## it cost 216 s of wall time, where alone it takes about 3 minutes, and its
## load slowed a preinstalled-plugin test past its wait):
## 29 pod specs, each run twice on one node of a real cluster — the
## kubelet's own probes, and converted to probelet — and compared (Events,
## restarts, terminations, Ready and kill times, preStop hooks), in batches
## of 10 rows; the table in the test's log, and in
## $$PROBELET_DIFF_OUT/kubelet-diff.txt when set
e2e-kubelet-diff:
	E2E_RUN='^TestKubeletDifferential$$' E2E_SKIP= hack/e2e.sh

## e2e-upgrade: upgrades, rollbacks, version skew and restarts under 50
## gated pods and the same 50 with the kubelet's probes, alone (root;
## about 6 minutes: its hundred pods would load the suite's parallel
## tests): the previous release (hack/upgrade/PREVIOUS) built from the
## repository's history, installed with Helm and kustomize, upgraded and
## rolled back; the kubelet, containerd, the CRI proxy, probelet, the
## controller's leader and a node reboot restarted under it. The table in
## the test's log, and in $$PROBELET_UPGRADE_OUT/upgrade.txt when set;
## README "Upgrades, rollbacks and restarts"
e2e-upgrade:
	E2E_RUN='^TestClusterUpgradeRollbackAndRestarts$$' E2E_SKIP= hack/e2e.sh

## e2e-crio: the suite's core on a CRI-O test bed (PROBELET_TESTBED_RUNTIME=crio):
## lifecycle, each probe kind and its kubelet rules, kills, restarts of the
## runtime and of probelet, crictl and probectl, the CRI proxy under a real
## kubelet and through its own restarts, and the readiness gate on a
## control plane. The rest of the suite tests what does not depend on the
## runtime, or containerd's own parts (ctr, its bundles for --exec-mode
## direct, its non-CRI services).
## E2E_CRIO_TESTS='.*' runs all of it on CRI-O.
E2E_CRIO_TESTS ?= ^(TestProbeKindsOnBothIO|TestReadinessFollowsTheApp|TestLivenessFailureStopsTheContainer|TestLivenessFailureCausedByTheExitDoesNotKill|TestStartupGatesLivenessAndReadiness|TestExecProbeExitCodesAndTimeout|TestTCPShortCircuit|TestContainerExitingByItself|TestInvalidAnnotation|TestRuntimeRestart|TestPodRemovedAfterRuntimeRestart|TestProbeletRestart|TestHistorySurvivesARestart|TestCrictlAndProbectl|TestCRIProxyRunsAKubelet|TestCRIProxySurvivesItsOwnRestarts|TestClusterReadinessGateAndEvents)$$
e2e-crio:
	PROBELET_TESTBED_RUNTIME=crio E2E_RUN='$(E2E_CRIO_TESTS)' E2E_SKIP= hack/e2e.sh

## e2e-std: the kubelet-rule probe tests once more with the agents on
## --io=std (not in make test since 2026-12-06, for CI's budget: the suite's
## TestProbeKindsOnBothIO runs every probe kind through both I/O modes on
## real containers, and the unit suite the engine on --io=std)
E2E_PROBE_TESTS := ^(TestReadinessFollowsTheApp|TestLivenessFailureStopsTheContainer|TestLivenessFailureCausedByTheExitDoesNotKill|TestStartupGatesLivenessAndReadiness|TestExecProbeExitCodesAndTimeout|TestTCPShortCircuit|TestContainerExitingByItself)$$
e2e-std:
	PROBELET_E2E_IO=std E2E_RUN='$(E2E_PROBE_TESTS)' hack/e2e.sh

## lint: gofmt check, go vet and staticcheck (installed by hack/tools.sh)
## once over every file: the build tags only add files (e2e, bench, soak,
## vm), so one pass with all of them checks what a pass per tag would
LINT_TAGS ?= e2e bench soak vm
lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet -tags '$(LINT_TAGS)' ./...
	@sc=$$(hack/tools.sh staticcheck) && $$sc -tags '$(LINT_TAGS)' ./...

## soak: the node-scale soak and chaos run on a real containerd (root;
## PROBELET_TESTBED_RUNTIME=crio: CRI-O): SOAK_PODS pods, SOAK_DURATION in
## all, SOAK_CHAOS runtime restarts (SOAK_RUNTIME_RESTARTS, when set) and
## probelet SIGKILLs; a report, and a failure on any breach
SOAK_DURATION ?= 4m
SOAK_PODS     ?= 110
SOAK_CHAOS    ?= 20
SOAK_RUNTIME_RESTARTS ?= $(SOAK_CHAOS)
SOAK_EXEC_MODE ?= direct
SOAK_IO       ?=
soak:
	@if [ "$$(id -u)" -ne 0 ]; then \
		if . hack/lib/ci.sh && ci_set; then echo "soak: CI needs root for the containerd test bed" >&2; exit 1; fi; \
		echo "soak: skipped: needs root (a private containerd test bed)"; exit 0; fi
	PROBELET_E2E=1 PROBELET_E2E_IO=$(SOAK_IO) SOAK_DURATION=$(SOAK_DURATION) SOAK_PODS=$(SOAK_PODS) SOAK_CHAOS=$(SOAK_CHAOS) SOAK_RUNTIME_RESTARTS=$(SOAK_RUNTIME_RESTARTS) SOAK_EXEC_MODE=$(SOAK_EXEC_MODE) \
		$(GO) test -tags 'e2e soak' -count=1 -timeout 60m -run '^TestSoak$$' -v ./e2e/

## bench: engine, eBPF and CRI benchmarks, side by side
bench:
	hack/bench.sh

## bench-scale: the cluster side at 1,000 and 5,000 simulated nodes (about 50 minutes; root)
bench-scale:
	BENCH_ONLY=11 hack/bench.sh

## generate: regenerate bpf2go objects and protobuf code (installs clang, protoc, ...)
generate:
	hack/gen-ebpf.sh
	hack/gen-proto.sh
	hack/gen-api.sh

## demo: build everything, start a containerd test bed and probelet, run the demo pod
demo: build
	hack/demo.sh up $(DEMO_DIR)

## demo-down: stop the demo's probelet and test bed
demo-down:
	hack/demo.sh down $(DEMO_DIR)

## demo-cluster: a two-node cluster (control plane, kubelets, containerd)
## with probelet writing the readiness gate and Events, and probelet-controller marking a silent node's pods
demo-cluster: build
	hack/demo-cluster.sh up $(DEMO_CLUSTER_DIR)

## demo-cluster-down: tear the demo cluster down
demo-cluster-down:
	hack/demo-cluster.sh down $(DEMO_CLUSTER_DIR)

clean:
	rm -rf $(BIN)
