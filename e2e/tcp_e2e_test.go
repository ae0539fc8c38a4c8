//go:build e2e

package e2e_test

import (
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/probelet/probelet/internal/testbed"
	"github.com/probelet/probelet/probespec"
)

// TestTCPShortCircuit: by default TCP probes are answered from the eBPF
// listener table (method "ebpf"), and the answers are a dial's: an app on
// every address is alive, an app listening only on 127.0.0.1 is not
// reachable from the node, so its liveness probe fails with the dial's
// error and the container is stopped. With --tcp-verify every eBPF answer
// is checked by a dial, which then answers (method "dial"), and no
// disagreement may be counted.
func TestTCPShortCircuit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		flags  []string
		method string
	}{{"default", nil, "ebpf"}, {"verify", []string{"--tcp-verify"}, "dial"}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bed := testbed.Start(t)
			d := startProbelet(t, bed, tc.flags...)
			if v, ok := d.sample("probelet_tcp_mode", map[string]string{"mode": "ebpf"}); !ok || v != 1 {
				t.Fatalf("probelet_tcp_mode{mode=ebpf} = %v (present %v), want 1", v, ok)
			}
			checkReachable(t, d, bed, tc.method)
			checkLoopbackOnly(t, d, bed, tc.method)
			if v := d.sum("probelet_tcp_shortcircuit_mismatch_total"); v != 0 {
				t.Errorf("%v eBPF answers disagreed with a dial", v)
			}
			if v := d.sum("probelet_tcp_shortcircuit_fallback_total"); v != 0 {
				t.Errorf("the short-circuit left %v probes to a dial; want it to decide every one", v)
			}
			ebpf, _ := d.sample("probelet_tcp_probes_total", map[string]string{"method": "ebpf"})
			dial, _ := d.sample("probelet_tcp_probes_total", map[string]string{"method": "dial"})
			t.Logf("TCP probes answered: %v from the eBPF table, %v by dialing", ebpf, dial)
			if n := map[string]float64{"ebpf": dial, "dial": ebpf}[tc.method]; n != 0 || ebpf+dial == 0 {
				t.Errorf("TCP probes: %v by eBPF, %v dialed; want all by %s", ebpf, dial, tc.method)
			}
		})
	}
}

// checkReachable: an app on 0.0.0.0 is alive, and a dial agrees.
func checkReachable(t *testing.T, d *daemon, bed *testbed.Bed, method string) {
	t.Helper()
	a := runApp(t, bed, appSpec{name: "any", cmd: webApp, probes: probespec.ContainerProbes{Liveness: tcpProbe(appPort, 1, 3)}})
	waitProbe(t, d, a, "liveness", "Success")
	if l := d.describe(a.ctr).Probes["liveness"]; l.Method != method {
		t.Errorf("liveness answered by %q, want %s", l.Method, method)
	}
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(a.ip, strconv.Itoa(appPort)), time.Second)
	if err != nil {
		t.Fatalf("a dial disagrees with the short-circuit: %v", err)
	}
	conn.Close()
}

// checkLoopbackOnly: an app on 127.0.0.1 fails liveness with the error a
// dial from the node gets, and is stopped.
func checkLoopbackOnly(t *testing.T, d *daemon, bed *testbed.Bed, method string) {
	t.Helper()
	a := runApp(t, bed, appSpec{name: "loopback", cmd: loopbackWebApp, probes: probespec.ContainerProbes{Liveness: tcpProbe(appPort, 1, 3)}})
	// httpd listens inside the container; the probe must still fail.
	eventually(t, 10*time.Second, "httpd listening on 127.0.0.1", func() (bool, string) {
		out, code, err := bed.Exec(a.ctr, "sh", "-c", "netstat -ltn | grep -q 127.0.0.1:8080")
		return err == nil && code == 0, fmt.Sprintf("exit %d, %v: %s", code, err, out)
	})
	_, dialErr := net.DialTimeout("tcp", net.JoinHostPort(a.ip, strconv.Itoa(appPort)), time.Second)
	if dialErr == nil {
		t.Fatal("a dial to the pod IP reached the loopback-only app")
	}
	eventually(t, 10*time.Second, "the liveness kill", func() (bool, string) {
		v := d.describe(a.ctr)
		return len(v.Restarts) == 1, fmt.Sprintf("liveness %+v", v.Probes["liveness"])
	})
	l := d.describe(a.ctr).Probes["liveness"]
	if l.Result != "Failure" || l.Method != method || l.LastOutput != dialErr.Error() {
		t.Errorf("liveness %s by %s with %q; want Failure by %s with the dial's %q", l.Result, l.Method, l.LastOutput, method, dialErr)
	}
	waitExited(t, bed, a.ctr, 10*time.Second)
}
