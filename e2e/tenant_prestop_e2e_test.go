//go:build e2e

package e2e_test

import (
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/probelet/probelet/internal/testbed"
	"github.com/probelet/probelet/probespec"
)

// preStopAt is the kubelet's preStopHandler container annotation for an
// httpGet hook to host:port ("" is the pod's own IP).
func preStopAt(t *testing.T, host string, port int) map[string]string {
	t.Helper()
	h, err := json.Marshal(corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Host: host, Path: "/", Port: intstr.FromInt32(int32(port))}})
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{probespec.AnnotationPreStopHandler: string(h)}
}

// TestTenantPreStopHooksReachOnlyTheirPod: pods whose liveness fails at
// once carry preStop httpGet hooks aimed past their own pod — at the node's
// loopback, at the node's bridge address, at a neighbour pod — as a pod
// author can write them (the kubelet would send each). Under probelet each
// kill runs its hook under the probes' host rule: nothing reaches the
// listeners, each hook fails naming the host it would not dial
// (FailedPreStopHook), the kill goes on, and the victim beside them keeps
// its probes on time. A pod whose hook names its own pod is the control:
// its hook is sent and succeeds.
func TestTenantPreStopHooksReachOnlyTheirPod(t *testing.T) {
	bed := testbed.Start(t)
	d := startProbelet(t, bed)
	victim := victimApp(t, bed, webApp)
	loopback := listenCounting(t, "127.0.0.1:0")
	bridge := listenCounting(t, net.JoinHostPort(bridgeIPv4(t, bed), "0"))
	grace := int64(3)
	dying := probespec.ContainerProbes{Liveness: execProbe(1, 1, "false")}
	attackers := map[string]map[string]string{
		"hook-loopback":  preStopAt(t, "127.0.0.1", loopback.port()),
		"hook-bridge":    preStopAt(t, bridgeIPv4(t, bed), bridge.port()),
		"hook-neighbour": preStopAt(t, victim.ip, appPort),
	}
	for name, anno := range attackers {
		runApp(t, bed, appSpec{name: name, cmd: webApp, probes: dying, grace: &grace, ctrAnnotations: anno})
	}
	runApp(t, bed, appSpec{name: "hook-own", cmd: webApp, probes: dying, grace: &grace, ctrAnnotations: preStopAt(t, "", appPort)})

	hookLog := func(msg, name string) (logEntry, bool) {
		for _, e := range d.logsMatching(msg) {
			if e.str("pod") == "default/"+name {
				return e, true
			}
		}
		return nil, false
	}
	eventually(t, 60*time.Second, "every hook run, the victim on time meanwhile", func() (bool, string) {
		if n, m := loopback.accepts.Load(), bridge.accepts.Load(); n+m > 0 {
			t.Fatalf("a hook reached the node: %d connections to 127.0.0.1, %d to the bridge address", n, m)
		}
		if s := victimOnTime(d, victim); s != "" {
			t.Fatal(s)
		}
		for name := range attackers {
			if _, ok := hookLog("PreStop hook failed", name); !ok {
				return false, name + "'s hook has not run"
			}
		}
		_, ok := hookLog("PreStop hook completed", "hook-own")
		return ok, "the control's hook has not completed"
	})
	for name := range attackers {
		e, _ := hookLog("PreStop hook failed", name)
		if err := e.str("error"); !strings.Contains(err, "is not dialed") {
			t.Errorf("%s: hook error %q does not say the host is not dialed", name, err)
		}
	}
	if _, failed := hookLog("PreStop hook failed", "hook-own"); failed {
		t.Error("the control's hook to its own pod failed")
	}
	out, _, _ := d.probectl("events", "-o", "json")
	if n := strings.Count(out, "FailedPreStopHook"); n < len(attackers) {
		t.Errorf("probectl events shows %d FailedPreStopHook events, want %d:\n%s", n, len(attackers), out)
	}
	if kills := len(d.logsMatching("Killing container with a grace period")); kills < len(attackers)+1 {
		t.Errorf("%d kills, want every attacker and the control killed after its hook", kills)
	}
	during(t, 3*time.Second, "no connection from the hooks, the victim on time", func() (bool, string) {
		if n, m := loopback.accepts.Load(), bridge.accepts.Load(); n+m > 0 {
			return false, fmt.Sprintf("%d connections to 127.0.0.1, %d to the bridge address", n, m)
		}
		return victimOnTime(d, victim) == "", victimOnTime(d, victim)
	})
}
