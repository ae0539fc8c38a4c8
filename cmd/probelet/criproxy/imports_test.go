package criproxy_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestProxyLinksNothingThatReadsPodInput: the proxy's process is built
// from cri/proxy and internal helpers only; none of the packages that read
// what a pod author writes (the engine, the node cache, NRI, the API side,
// eBPF) is even linked into its code path. The direct executor's Go side
// is (--exec-mode direct): it reads containerd's bundle (config.json) and
// /proc, hands the command to the helper, a process of its own, and
// relays the output as bytes it never reads; with it come the exec runner
// interface and its timeout error (prober/probe, prober/probe/execprobe).
// So is the quiet I/O's room (quietio: the --io switch and the raw unix
// connection to containerd), which reads bytes and no pod's input.
func TestProxyLinksNothingThatReadsPodInput(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "github.com/probelet/probelet/cmd/probelet/criproxy").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	const module = "github.com/probelet/probelet/"
	allowed := []string{"cmd/probelet/criproxy", "cri/proxy", "internal/", "directexec", "prober/probe", "prober/probe/execprobe", "quietio", "quietio/"}
	for pkg := range strings.FieldsSeq(string(out)) {
		rel, ours := strings.CutPrefix(pkg, module)
		if !ours {
			continue
		}
		ok := false
		for _, a := range allowed {
			ok = ok || rel == a || (strings.HasSuffix(a, "/") && strings.HasPrefix(rel, a))
		}
		if !ok || strings.HasPrefix(rel, "internal/testbed") || strings.HasPrefix(rel, "internal/cluster") {
			t.Errorf("the CRI proxy links %s", pkg)
		}
	}
}
