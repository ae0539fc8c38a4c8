//go:build e2e

package e2e_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/probelet/probelet/probespec"
)

// TestTenantProbeHostNamespaceGrantOnCluster: with the API server, a probe
// naming the node's 127.0.0.1 is a spec error on the socket, in a Warning
// Event ProbeSpecRejected and in the condition's message, and makes no
// connection; once a cluster admin labels the namespace
// probelet.io/allow-probe-host=true, the same pod's probe runs.
func TestTenantProbeHostNamespaceGrantOnCluster(t *testing.T) {
	n := startClusterNode(t)
	target := listenCounting(t, "127.0.0.1:0")
	probe := tcpProbe(target.port(), 1, 1)
	probe.TCPSocket.Host = "127.0.0.1"
	n.create(n.apiPod("ssrf", shell("sleep 3600"), probespec.ContainerProbes{Readiness: probe}, true))
	id := n.containerID("ssrf")
	const field = "readinessProbe.tcpSocket.host"
	eventually(t, 30*time.Second, "the spec error on the socket", func() (bool, string) {
		ctr, ok := n.d.ctr(id)
		return ok && strings.Contains(ctr.SpecError, field) && len(ctr.Probes) == 0, fmt.Sprintf("%+v", ctr)
	})
	eventually(t, 30*time.Second, "the spec error in the condition", func() (bool, string) {
		gate, _ := condition(n.pod("ssrf"), readyGate)
		return gate.Status == corev1.ConditionFalse && gate.Reason == "ProbeSpecRejected" &&
			strings.Contains(gate.Message, field), fmt.Sprintf("%+v", gate)
	})
	eventually(t, 30*time.Second, "the ProbeSpecRejected Event", func() (bool, string) {
		evs := n.probeletEvents("ssrf", "ProbeSpecRejected")
		return len(evs) == 1 && evs[0].Type == corev1.EventTypeWarning && strings.Contains(evs[0].Message, field),
			fmt.Sprintf("%+v", evs)
	})
	if got := target.accepts.Load(); got != 0 {
		t.Fatalf("%d connections to the node's 127.0.0.1 before the grant, want 0", got)
	}

	if out, err := n.c.Kubectl("label", "namespace", "default", probespec.LabelAllowProbeHost+"=true"); err != nil {
		t.Fatalf("kubectl label: %v\n%s", err, out)
	}
	eventually(t, 30*time.Second, "the granted probe to run", func() (bool, string) {
		ctr, _ := n.d.ctr(id)
		return ctr.SpecError == "" && ctr.Ready && target.accepts.Load() > 0,
			fmt.Sprintf("%+v, %d connections", ctr, target.accepts.Load())
	})
	n.waitConditions("ssrf", corev1.ConditionTrue, 30*time.Second)
}
