package tracker

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/probelet/probelet/ebpf/ebpftest"
)

// gatedCalls are the helpers each have_* gate must keep from the verifier.
var gatedCalls = map[Features]string{
	SockFromFile:  "bpf_sock_from_file",
	TracingCookie: "bpf_get_socket_cookie",
}

// reachedCall matches helper in the verifier's log of processed
// instructions ("29: (85) call bpf_get_socket_cookie#46"); newer kernels
// also list every instruction, reached or not, indented, with the
// registers live before it, which must not count.
func reachedCall(log, helper string) bool {
	return regexp.MustCompile(`(?m)^[0-9]+: \(85\) call ` + helper + `#`).MatchString(log)
}

// TestGatesKeepNewHelpersFromTheVerifier loads the objects on this kernel
// with every have_* gate off, then on, and reads the verifier's log of each
// program: with a gate off the verifier must never reach the helper it
// guards, so a kernel without that helper loads the program too (the
// static check, TestObjectsLoadOnMinKernel, trusts this). With the gate on,
// the call must be reached: the gate really switches the path.
func TestGatesKeepNewHelpersFromTheVerifier(t *testing.T) {
	ebpftest.RequireRoot(t)
	probed, err := kernelFeatures()
	t.Logf("this kernel offers: %s (probe errors: %v)", probed, err)
	for _, on := range []Features{NoFeatures, probed} {
		logs := verifierLogs(t, on)
		for f, call := range gatedCalls {
			reached := reachedCall(logs, call)
			if reached != on.Has(f) {
				t.Errorf("features %s: verifier reached %q = %v, want %v", on, call, reached, on.Has(f))
			}
		}
	}
}

// verifierLogs loads every program with the gates set to f and returns
// their verifier logs, concatenated.
func verifierLogs(t *testing.T, f Features) string {
	t.Helper()
	spec, err := loadTracker()
	if err != nil {
		t.Fatal(err)
	}
	if err := spec.Variables[trackerVarHaveSockFromFile].Set(f.Has(SockFromFile)); err != nil {
		t.Fatal(err)
	}
	if err := spec.Variables[trackerVarHaveTracingCookie].Set(f.Has(TracingCookie)); err != nil {
		t.Fatal(err)
	}
	coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{
		Programs: ebpf.ProgramOptions{LogLevel: ebpf.LogLevelInstruction},
	})
	if err != nil {
		t.Fatalf("load with features %s: %v", f, err)
	}
	defer coll.Close()
	var b strings.Builder
	for name, p := range coll.Programs {
		if p.VerifierLog == "" {
			t.Fatalf("program %s: no verifier log", name)
		}
		b.WriteString(p.VerifierLog)
	}
	return b.String()
}

// TestFeaturesAreTheKernelsWithinTheAllowed checks which capabilities a
// tracker reports: what the kernel offers, limited by WithFeatures.
func TestFeaturesAreTheKernelsWithinTheAllowed(t *testing.T) {
	ebpftest.RequireRoot(t)
	probed, _ := kernelFeatures()
	for _, allowed := range []Features{AllFeatures, NoFeatures, SockFromFile, TracingCookie} {
		tr, err := New(context.Background(), WithFeatures(allowed))
		if err != nil {
			t.Fatalf("New(%s): %v", allowed, err)
		}
		if got, want := tr.Features(), probed&allowed; got != want {
			t.Errorf("allowed %s: Features = %s, want %s", allowed, got, want)
		}
		if err := tr.Close(); err != nil {
			t.Error(err)
		}
	}
	if _, err := New(context.Background(), WithFeatures(1<<7)); err == nil {
		t.Error("WithFeatures accepted an unknown feature")
	}
}
