//go:build e2e

package e2e_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/probelet/probelet/internal/testbed"
	"github.com/probelet/probelet/prober/spec"
)

// TestContainerExitingByItself: a container that exits on its own is not
// ready (Failure) and is not killed: probelet issues no StopContainer.
func TestContainerExitingByItself(t *testing.T) {
	t.Parallel()
	bed := testbed.Start(t)
	d := startProbelet(t, bed)
	a := runApp(t, bed, appSpec{name: "quitter", cmd: shell(`echo started; touch /tmp/up; sleep 3; exit 7`), probes: spec.ContainerProbes{
		Liveness:  execProbe(1, 1, "true"),
		Readiness: execProbe(1, 1, "cat", "/tmp/up"),
	}})
	waitReady(t, d, a, true, "")
	st := waitExited(t, bed, a.ctr, 10*time.Second)
	if st.ExitCode != 7 {
		t.Fatalf("exit code %d, want 7", st.ExitCode)
	}
	eventually(t, 5*time.Second, "probelet to show the exit", func() (bool, string) {
		c, ok := d.ctr(a.ctr)
		return ok && c.State == testbed.StateExited && !c.Ready && c.Probes["readiness"].Result == "Failure",
			fmt.Sprintf("listed %v: %+v", ok, c)
	})
	// Two liveness periods after the exit nothing may have been killed.
	during(t, 2*time.Second, "no kill for an exited container", func() (bool, string) {
		v := d.describe(a.ctr)
		return v.RestartsIssued == 0 && len(v.Restarts) == 0, fmt.Sprintf("restarts %+v", v.Restarts)
	})
	if kills := d.logsMatching("Killing container"); len(kills) > 0 {
		t.Errorf("probelet killed something: %v", kills)
	}
	v := d.describe(a.ctr)
	t.Logf("after the exit: state %s, ready %v, liveness %s (on hold %v), readiness %s: %q",
		v.State, v.Ready, v.Probes["liveness"].Result, v.Probes["liveness"].OnHold, v.Probes["readiness"].Result, v.Probes["readiness"].LastOutput)
}

// TestLivenessFailureCausedByTheExitDoesNotKill reproduces the exit race
// deterministically: the exec liveness probe (sleep, threshold 1) is
// running when the container's init exits, so the runtime kills it with
// the container and the probe fails at the very moment of the exit, while
// containerd's exit event may still be on its way. The kubelet acts on a
// liveness failure only for a running container; probelet must neither
// stop the container nor report a kill.
func TestLivenessFailureCausedByTheExitDoesNotKill(t *testing.T) {
	t.Parallel()
	bed := testbed.Start(t)
	d := startProbelet(t, bed)
	live := execProbe(1, 1, "sleep", "600")
	live.TimeoutSeconds = 900
	a := runApp(t, bed, appSpec{name: "racer", cmd: shell(`sleep 5; exit 7`), probes: spec.ContainerProbes{Liveness: live}})
	waitProbeInFlight(t, bed, a)
	st := waitExited(t, bed, a.ctr, 15*time.Second)
	if st.ExitCode != 7 {
		t.Fatalf("exit code %d, want 7 (the container was stopped, not exited by itself)", st.ExitCode)
	}
	// The failed probe reached the kill decision and was held back.
	eventually(t, 10*time.Second, "the liveness failure and the held-back kill", func() (bool, string) {
		v := d.describe(a.ctr)
		return v.Probes["liveness"].Result == "Failure" && len(d.logsMatching("Not killing")) > 0,
			fmt.Sprintf("liveness %+v", v.Probes["liveness"])
	})
	assertNotKilled(t, d, a)
	t.Logf("held back: %v", d.logsMatching("Not killing")[0])
}

// TestLivenessFailureWhileTheInitExitsDoesNotKill holds the exit race's
// window open: when a container's init exits, the kernel kills the other
// processes of its PID namespace and waits until they are reaped before the
// init turns zombie, and containerd reports RUNNING until then. Here one of
// those processes has a parent outside the container that never reaps it,
// so the init stays exiting, and the runtime says RUNNING, for as long as
// the test likes. The app's listener is gone with the namespace, so the TCP
// liveness probe fails for the container that is exiting on its own:
// probelet must see the exiting init and not kill.
func TestLivenessFailureWhileTheInitExitsDoesNotKill(t *testing.T) {
	t.Parallel()
	bed := testbed.Start(t)
	d := startProbelet(t, bed)
	live := tcpProbe(appPort, 1, 1)
	a := runApp(t, bed, appSpec{name: "exiter", probes: spec.ContainerProbes{Liveness: live},
		cmd: shell(`trap "exit 7" USR1; httpd -f -p 8080 -h /var/www & wait`)})
	eventually(t, 10*time.Second, "the liveness probe to succeed", func() (bool, string) {
		v := d.describe(a.ctr)
		return v.Probes["liveness"].Result == "Success", fmt.Sprintf("liveness %+v", v.Probes["liveness"])
	})
	st, err := bed.ContainerState(a.ctr)
	if err != nil || st.Pid == 0 {
		t.Fatalf("container %.12s: %+v, %v", a.ctr, st, err)
	}
	releaseInit := holdExitingInit(t, st.Pid)

	if err := syscall.Kill(st.Pid, syscall.SIGUSR1); err != nil {
		t.Fatalf("signal the init: %v", err)
	}
	// The failure comes within a period of the listener's end.
	window := time.Duration(live.FailureThreshold+1) * time.Duration(live.PeriodSeconds) * time.Second
	eventually(t, window+10*time.Second, "the liveness failure and the held-back kill", func() (bool, string) {
		v := d.describe(a.ctr)
		return v.Probes["liveness"].Result == "Failure" && len(d.logsMatching("Not killing")) > 0,
			fmt.Sprintf("liveness %+v", v.Probes["liveness"])
	})
	held := d.logsMatching("Not killing")[0]
	if st, err := bed.ContainerState(a.ctr); err != nil || st.State != testbed.StateRunning {
		t.Fatalf("the runtime saw the exit while the init was held (%+v, %v): the window was not open", st, err)
	}
	if e := held.str("error"); !strings.Contains(e, "is exiting") {
		t.Errorf("held back for another reason than the exiting init: %v", held)
	}

	releaseInit()
	if st := waitExited(t, bed, a.ctr, window+10*time.Second); st.ExitCode != 7 {
		t.Fatalf("exit code %d, want 7 (the container was stopped, not exited by itself)", st.ExitCode)
	}
	assertNotKilled(t, d, a)
	t.Logf("held back: %v", held)
}

// assertNotKilled checks that probelet neither stopped a's container nor
// recorded or published a kill of it.
func assertNotKilled(t *testing.T, d *daemon, a app) {
	t.Helper()
	v := d.describe(a.ctr)
	if v.RestartsIssued != 0 || len(v.Restarts) != 0 {
		t.Errorf("restarts recorded for a container that exited by itself: %+v", v.Restarts)
	}
	if kills := d.logsMatching("Killing container"); len(kills) > 0 {
		t.Errorf("probelet stopped the container: %v", kills)
	}
	if out := d.mustProbectl("events", "-o", "json"); strings.Contains(out, `"Killing"`) {
		t.Errorf("a Killing event was published: %s", out)
	}
}

// holdExitingInit puts a process into the PID namespace of initPid whose
// parent, outside the namespace, never reaps it: once the init exits, the
// kernel kills that process and the init waits, exiting, until it is
// reaped. The returned func (also run at cleanup) ends the parent, so the
// orphan is reaped and the init's exit completes.
func holdExitingInit(t *testing.T, initPid int) (release func()) {
	t.Helper()
	// nsenter -F: the shell stays outside, its children start inside; it
	// starts one, says its pid, and becomes a sleep that never waits.
	cmd := exec.Command("nsenter", "-t", strconv.Itoa(initPid), "-p", "-F", "--",
		"sh", "-c", `sleep 3600 & echo $!; exec sleep 3600`)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("nsenter: %v", err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		})
	}
	t.Cleanup(release)
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("nsenter said no pid: %v", err)
	}
	child := strings.TrimSpace(line)
	ns, err := os.Readlink("/proc/" + child + "/ns/pid")
	if err != nil {
		t.Fatalf("the held process %s: %v", child, err)
	}
	if want, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", initPid)); ns != want {
		t.Fatalf("the held process %s is in %s, not in the init's %s", child, ns, want)
	}
	return release
}

// waitProbeInFlight waits until the exec probe's sleep runs in the container.
func waitProbeInFlight(t *testing.T, bed *testbed.Bed, a app) {
	t.Helper()
	eventually(t, 10*time.Second, "the exec probe to run in the container", func() (bool, string) {
		out, _, err := bed.Exec(a.ctr, "sh", "-c", "ps -o args | grep -c '^sleep 600'")
		return err == nil && strings.TrimSpace(string(out)) != "0", string(out)
	})
}
