package ebpf_test

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/probelet/probelet/ebpf"
	"github.com/probelet/probelet/ebpf/ebpftest"
)

const minCapsChildEnv = "PROBELET_TEST_MINCAPS_CHILD"

// TestMinimalCapabilities re-runs itself as root with only CAP_BPF and
// CAP_PERFMON: the tracker loads, sock_diag cannot enter the pod namespace,
// and answers come from the snapshot and events, with a full accept queue
// left to a dial.
func TestMinimalCapabilities(t *testing.T) {
	if os.Getenv(minCapsChildEnv) != "" {
		minCapsChild(t)
		return
	}
	ns := newNetNS(t, 9)
	open := listenIn(t, ns, ebpftest.ListenConfig{Addr: any4})
	local := listenIn(t, ns, ebpftest.ListenConfig{Addr: loopback})
	full := listenIn(t, ns, ebpftest.ListenConfig{Addr: any4, Backlog: 1})
	(&env{t: t, ns: ns}).fill(ns.PodIP, full.Port, 2) // backlog 1 holds two

	bin := copyExecutable(t)
	cmd := exec.Command("setpriv", "--bounding-set", "-all,+bpf,+perfmon", "--inh-caps", "-all", "--",
		bin, "-test.run", "^"+t.Name()+"$", "-test.v")
	cmd.Env = append(os.Environ(), minCapsChildEnv+"="+strings.Join([]string{
		ns.Path, ns.PodIP.String(), strconv.Itoa(open.Port), strconv.Itoa(local.Port), strconv.Itoa(full.Port),
	}, ","))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("child with CAP_BPF+CAP_PERFMON: %v\n%s", err, out)
	}
	t.Logf("with CAP_BPF+CAP_PERFMON only:\n%s", out)
}

func listenIn(t *testing.T, ns *ebpftest.NetNS, c ebpftest.ListenConfig) *ebpftest.Listener {
	t.Helper()
	l, err := ns.Listen(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func minCapsChild(t *testing.T) {
	f := strings.Split(os.Getenv(minCapsChildEnv), ",")
	if len(f) != 5 {
		t.Fatalf("bad %s=%q", minCapsChildEnv, os.Getenv(minCapsChildEnv))
	}
	ns := &ebpftest.NetNS{Path: f[0], PodIP: netip.MustParseAddr(f[1])}
	port := func(s string) int {
		p, err := strconv.Atoi(s)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	e := newEnv(t, ns) // ModeEBPF: must load with these two capabilities
	if e.p.Mode() != ebpf.ModeEBPF {
		t.Fatalf("mode %s", e.p.Mode())
	}
	e.check(e.target(ns.PodIP, port(f[2])), success, viaEBPF)
	e.check(e.target(ns.PodIP, port(f[3])), failure, viaEBPF)
	e.check(e.target(ns.PodIP, port(f[4])), failure, viaDial)
	fmt.Println("answered from the snapshot without sock_diag")
}
