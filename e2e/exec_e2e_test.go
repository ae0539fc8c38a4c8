//go:build e2e

package e2e_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/probelet/probelet/internal/testbed"
	"github.com/probelet/probelet/prober/probe/execprobe"
	"github.com/probelet/probelet/probespec"
)

// TestExecProbeExitCodesAndTimeout: exec probes run through the runtime's
// ExecSync; exit 0 is Success, any other exit code Failure with the
// command's output, and a command outliving timeoutSeconds is a Failure
// with the kubelet's output on that runtime (execTimeoutOutput).
func TestExecProbeExitCodesAndTimeout(t *testing.T) {
	t.Parallel()
	bed := testbed.Start(t)
	d := startProbelet(t, bed)
	codes := runApp(t, bed, appSpec{name: "codes", cmd: sleeper, probes: probespec.ContainerProbes{
		Readiness: execProbe(1, 1, "sh", "-c", `c=$(cat /tmp/code 2>/dev/null || echo 0); echo "exit $c"; exit $c`),
	}})
	slowProbe := execProbe(1, 1, "sleep", "5")
	slowProbe.TimeoutSeconds = 1
	slow := runApp(t, bed, appSpec{name: "slow", cmd: sleeper, probes: probespec.ContainerProbes{Readiness: slowProbe}})

	for _, step := range []struct {
		code  int
		ready bool
	}{{0, true}, {3, false}, {0, true}, {1, false}, {42, false}, {0, true}} {
		mustExec(t, bed, codes.ctr, "sh", "-c", fmt.Sprintf("echo %d > /tmp/code", step.code))
		waitReady(t, d, codes, step.ready, fmt.Sprintf("exit %d\n", step.code))
	}
	if r := d.describe(codes.ctr).Probes["readiness"]; r.Method != "exec" {
		t.Errorf("readiness method %q, want exec", r.Method)
	}

	waitReady(t, d, slow, false, execTimeoutOutput(bed, slowProbe.Exec.Command, time.Second))
	runs := d.describe(slow.ctr).Probes["readiness"].History
	for _, r := range runs {
		if r.Result != "Failure" || !strings.Contains(r.Output, "timed out") || r.Error != "" {
			t.Errorf("run %+v; want a counted Failure that timed out", r)
		}
	}
	checkRunSpacing(t, runs, time.Second)
}

// execTimeoutOutput is the kubelet's output for an exec probe that outlived
// its timeout, which differs by runtime: containerd ends the call with
// DeadlineExceeded, which cri-client words `command timed out: "sleep 5"
// timed out after 1s`; CRI-O answers exit code -1 with stderr "command
// timed out" (conmon's text), which the kubelet reports as the output.
func execTimeoutOutput(bed *testbed.Bed, cmd []string, timeout time.Duration) string {
	if bed.Runtime() == testbed.CRIO {
		return "command timed out"
	}
	return execprobe.TimeoutOutput(cmd, timeout)
}

// checkRunSpacing: a timed-out run takes its timeout, and runs keep their
// period (they do not pile up behind slow commands).
func checkRunSpacing(t *testing.T, runs []runView, period time.Duration) {
	t.Helper()
	for i := 1; i < len(runs); i++ {
		if gap := runs[i].Time.Sub(runs[i-1].Time); gap < period-100*time.Millisecond || gap > 3*period {
			t.Errorf("runs %d and %d are %v apart; want about the %v period", i-1, i, gap, period)
		}
	}
}
