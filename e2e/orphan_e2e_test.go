//go:build e2e

package e2e_test

import (
	"strings"
	"testing"
	"time"

	"github.com/probelet/probelet/internal/testbed"
	"github.com/probelet/probelet/probespec"
)

// TestPodRemovedAfterRuntimeRestart: containerd announces no
// StopPodSandbox or RemovePodSandbox for pods from before its restart
// (containerd #8426). Such a pod leaves probelet's socket with its last
// container, not at the next safety reconcile (turned off here). CRI-O
// announces them; the pod leaves the same way.
func TestPodRemovedAfterRuntimeRestart(t *testing.T) {
	t.Parallel()
	bed := testbed.Start(t)
	d := startProbelet(t, bed, "--reconcile-interval", "0")
	a := runApp(t, bed, appSpec{name: "old", cmd: sleeper, probes: probespec.ContainerProbes{
		Readiness: execProbe(1, 1, "true"),
	}})
	waitReady(t, d, a, true, "")
	if err := bed.RestartRuntime(); err != nil {
		t.Fatalf("restart %s: %v", bed.Runtime(), err)
	}
	waitReregistered(t, d, bed, 2)
	if out := crictlOn(t, d, "pods", "-q"); !strings.Contains(out, a.pod) {
		t.Fatalf("probelet lost the pod over the restart:\n%s", out)
	}
	if err := bed.RemovePod(a.pod); err != nil {
		t.Fatalf("remove pod: %v", err)
	}
	eventually(t, 10*time.Second, "the removed pod to leave probelet's socket", func() (bool, string) {
		out := crictlOn(t, d, "pods", "-q")
		return !strings.Contains(out, a.pod), "crictl pods -q:\n" + out
	})
}
