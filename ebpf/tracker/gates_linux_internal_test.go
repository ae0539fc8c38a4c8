package tracker

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/cilium/ebpf"

	"github.com/probelet/probelet/ebpf/ebpftest"
)

// gatedCalls are the helpers each have_* gate must keep from the verifier,
// in the program that calls them.
var gatedCalls = []struct {
	feature Features
	program string
	helper  string
}{
	{SockFromFile, "snapshot", "bpf_sock_from_file"},
	{TracingCookie, "on_state", "bpf_get_socket_cookie"},
	{SnapshotCookie, "snapshot", "bpf_get_socket_cookie"},
}

// mainPass is where the verifier's walk of the program begins: the entry
// state, "0: R1=ctx() R10=fp0". Newer kernels first list every
// instruction, reached or not, in passes of their own (6.18: the
// registers live before each, indented; 7.3 also the subprograms and
// their stack use, with numbers from 100 up flush left), which must not
// count as reached.
var mainPass = regexp.MustCompile(`(?m)^0: R1=`)

// reachedCall matches helper in the verifier's walk of the program
// ("29: (85) call bpf_get_socket_cookie#46").
func reachedCall(log, helper string) bool {
	if loc := mainPass.FindStringIndex(log); loc != nil {
		log = log[loc[0]:]
	}
	return regexp.MustCompile(`(?m)^[0-9]+: \(85\) call ` + helper + `#`).MatchString(log)
}

// around returns the lines of log within n of the first that mentions
// helper, for a failure's message.
func around(log, helper string, n int) string {
	lines := strings.Split(log, "\n")
	for i, l := range lines {
		if strings.Contains(l, helper) {
			return strings.Join(lines[max(0, i-n):min(len(lines), i+n)], "\n")
		}
	}
	return "(not mentioned)"
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
	for _, on := range []Features{NoFeatures, probed.usable()} {
		logs := verifierLogs(t, on)
		for _, g := range gatedCalls {
			reached := reachedCall(logs[g.program], g.helper)
			if reached != on.Has(g.feature) {
				t.Errorf("features %s: verifier reached %q in %s = %v, want %v; the log around it:\n%s",
					on, g.helper, g.program, reached, on.Has(g.feature), around(logs[g.program], g.helper, 12))
			}
		}
	}
}

// verifierLogs loads every program with the gates set to f and returns
// their verifier logs by program.
func verifierLogs(t *testing.T, f Features) map[string]string {
	t.Helper()
	spec, err := loadTracker()
	if err != nil {
		t.Fatal(err)
	}
	for name, g := range gates {
		if err := spec.Variables[name].Set(f.Has(g)); err != nil {
			t.Fatal(err)
		}
	}
	coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{
		Programs: ebpf.ProgramOptions{LogLevel: ebpf.LogLevelInstruction},
	})
	if err != nil {
		t.Fatalf("load with features %s: %v", f, err)
	}
	defer coll.Close()
	logs := make(map[string]string, len(coll.Programs))
	for name, p := range coll.Programs {
		if p.VerifierLog == "" {
			t.Fatalf("program %s: no verifier log", name)
		}
		logs[name] = p.VerifierLog
	}
	return logs
}

// TestFeaturesAreTheKernelsWithinTheAllowed checks which capabilities a
// tracker reports: what the kernel offers, limited by WithFeatures.
func TestFeaturesAreTheKernelsWithinTheAllowed(t *testing.T) {
	ebpftest.RequireRoot(t)
	probed, _ := kernelFeatures()
	for _, allowed := range []Features{AllFeatures, NoFeatures, SockFromFile, TracingCookie, SnapshotCookie, SockFromFile | TracingCookie} {
		tr, err := New(context.Background(), WithFeatures(allowed))
		if err != nil {
			t.Fatalf("New(%s): %v", allowed, err)
		}
		if got, want := tr.Features(), (probed & allowed).usable(); got != want {
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

// TestSnapshotCookieIsRefusedOnlyForTheCookie loads the snapshot program
// with have_snapshot_cookie on, as its probe does. Where the probe finds
// the capability absent, the verifier must have refused the cookie call
// itself and nothing else: a refusal anywhere else would be a bug in
// tracker.c that the probe turns into a quietly lost capability on every
// kernel.
func TestSnapshotCookieIsRefusedOnlyForTheCookie(t *testing.T) {
	ebpftest.RequireRoot(t)
	probed, _ := kernelFeatures()
	if !probed.Has(SockFromFile | TracingCookie) {
		t.Skipf("this kernel lacks the capabilities the snapshot's cookie builds on (%s)", probed)
	}
	spec, err := loadTracker()
	if err != nil {
		t.Fatal(err)
	}
	for name := range gates {
		if err := spec.Variables[name].Set(true); err != nil {
			t.Fatal(err)
		}
	}
	var objs struct {
		Snapshot *ebpf.Program `ebpf:"snapshot"`
	}
	err = spec.LoadAndAssign(&objs, &ebpf.CollectionOptions{Programs: ebpf.ProgramOptions{LogLevel: ebpf.LogLevelInstruction}})
	if err == nil {
		objs.Snapshot.Close()
	}
	if got, want := err == nil, probed.Has(SnapshotCookie); got != want {
		t.Fatalf("snapshot with the cookie loads = %v (%v), but the probe found snapshot_cookie = %v", got, err, want)
	}
	if err == nil {
		t.Logf("this kernel's verifier lets the snapshot give listeners their cookie")
		return
	}
	var ve *ebpf.VerifierError
	if !errors.As(err, &ve) {
		t.Fatalf("load: %v, want a verifier error", err)
	}
	tail := strings.Join(ve.Log[max(0, len(ve.Log)-4):], "\n")
	if !strings.Contains(tail, "call bpf_get_socket_cookie") {
		t.Fatalf("the verifier refused the snapshot somewhere other than the cookie call:\n%s", tail)
	}
	t.Logf("this kernel's verifier refuses the snapshot's cookie call, as the probe found:\n%s", tail)
}

// reachedCall reads only the verifier's walk, whatever the kernel lists
// before it.
func TestReachedCallReadsTheWalkOnly(t *testing.T) {
	const listing73 = "func#0 @0\nsubprog#0 snapshot:\n  7: (85) call bpf_sock_from_file#162\n" +
		"208: (85) call bpf_get_socket_cookie#46\nLive regs before insn:\n    208: .......... (85) call bpf_get_socket_cookie#46\n"
	for _, tc := range []struct {
		name, log string
		want      bool
	}{
		{"7.3 listing, not walked", listing73 + "0: R1=ctx() R10=fp0\n0: (79) r6 = *(u64 *)(r1 +24)\n", false},
		{"7.3 listing, walked", listing73 + "0: R1=ctx() R10=fp0\n208: (85) call bpf_get_socket_cookie#46\n", true},
		{"6.1, walked", "func#0 @0\n0: R1=ctx(off=0,imm=0) R10=fp0\n29: (85) call bpf_get_socket_cookie#46\n", true},
		{"6.1, not walked", "func#0 @0\n0: R1=ctx(off=0,imm=0) R10=fp0\n29: (85) call bpf_ringbuf_reserve#131\n", false},
	} {
		if got := reachedCall(tc.log, "bpf_get_socket_cookie"); got != tc.want {
			t.Errorf("%s: reachedCall = %v, want %v", tc.name, got, tc.want)
		}
	}
}
