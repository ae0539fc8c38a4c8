//go:build e2e

package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/probelet/probelet/internal/testbed"
	"github.com/probelet/probelet/probespec"
)

// raceFor is how long the ptrace race runs: a minute in the suite (two
// exec probes a second, 120 races; CI's budget), the 5 minutes
// with PROBELET_E2E_PTRACE_RACE=5m.
func raceFor(t *testing.T) time.Duration {
	if v := os.Getenv("PROBELET_E2E_PTRACE_RACE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("PROBELET_E2E_PTRACE_RACE: %v", err)
		}
		return d
	}
	return time.Minute
}

// ptraceRacer walks every process of its pid namespace over and over and
// tries to read the host's /etc/machine-id through /proc/N/root of each:
// what a container with CAP_SYS_PTRACE can do to a process that enters its
// pid namespace before its mount namespace. Only shell builtins run in the
// loop (the glob, read, test), so the racer itself takes no PIDs. It
// counts the new PIDs it saw in /tmp/seen and appends what it read to
// /tmp/leak.
const ptraceRacer = `max=1; seen=0
while :; do
	for p in /proc/[0-9]*; do
		n=${p#/proc/}
		[ "$n" = 1 ] && continue
		if read -r v < $p/root/etc/machine-id 2>/dev/null; then echo "$v" >> /tmp/leak; fi
		if [ "$n" -gt "$max" ]; then max=$n; seen=$((seen + 1)); echo $seen > /tmp/seen; fi
	done
done`

// TestExecHelperSurvivesAPtraceRace: a container with CAP_SYS_PTRACE races
// every process of its pid namespace for /proc/N/root while probelet runs
// an exec probe in it every second through the direct helper. The
// command's process is born inside the container's mount namespace (the
// helper joins every namespace in an intermediate process outside the
// container's pid namespace, as runc does), so the racer never reads the
// host's /etc/machine-id; a victim pod beside it stays probed on time.
func TestExecHelperSurvivesAPtraceRace(t *testing.T) {
	hostID, err := os.ReadFile("/etc/machine-id")
	if err != nil || len(strings.TrimSpace(string(hostID))) == 0 {
		t.Fatalf("the host's /etc/machine-id is the secret this test guards: %v", err)
	}
	bed := testbed.Start(t)
	d := startProbelet(t, bed, "--exec-mode", "direct", "--runtime-state-dir", filepath.Join(bed.Dir(), "state"))
	victim := victimApp(t, bed, webApp)
	// The command lives 200 ms, so that the racer, which takes its CPU
	// share with everything else on the node, sees each one; the window it
	// races for is before the command starts, as long as the helper's
	// setup is.
	probe := execProbe(1, 3, "sleep", "0.2")
	liveness := *probe
	liveness.FailureThreshold = 1000 // a slow run under load must not restart the racer
	anno, err := jsonString(probespec.PodProbes{"racer": {Readiness: probe, Liveness: &liveness}})
	if err != nil {
		t.Fatal(err)
	}
	_, racer, err := bed.RunPod(testbed.PodSpec{Name: "racer", Annotations: map[string]string{probespec.AnnotationProbes: anno},
		Container: testbed.ContainerSpec{Name: "racer", Command: shell(ptraceRacer),
			Security: &testbed.SecurityContext{AddCapabilities: []string{"SYS_PTRACE"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if out, code, err := bed.Exec(racer, "cat", "/etc/machine-id"); err == nil && code == 0 && strings.TrimSpace(string(out)) == strings.TrimSpace(string(hostID)) {
		t.Fatal("the container's own /etc/machine-id is the host's: the test cannot tell a leak")
	}
	seen := func() int {
		out, _, _ := bed.Exec(racer, "cat", "/tmp/seen")
		n, _ := strconv.Atoi(strings.TrimSpace(string(out)))
		return n
	}
	eventually(t, 30*time.Second, "the racer to see the probe's processes", func() (bool, string) {
		n := seen()
		procs, _, _ := bed.Exec(racer, "sh", "-c", "echo $$; ls -d /proc/[0-9]*")
		return n > 0, fmt.Sprintf("%d seen; the container's processes: %s", n, strings.Join(strings.Fields(string(procs)), " "))
	})
	race := raceFor(t)
	began := time.Now()
	during(t, race, "the victim on time while the racer runs", func() (bool, string) {
		why := victimOnTime(d, victim)
		return why == "", why
	})
	n := seen()
	// No probe process may outlive its run in the container: the helper
	// reaps the command it inherited from its intermediate.
	if ps, _, _ := bed.Exec(racer, "sh", "-c", "grep -l '^State:.*Z' /proc/[0-9]*/status; true"); strings.TrimSpace(string(ps)) != "" {
		t.Errorf("zombie processes in the container:\n%s", ps)
	}
	out, _, _ := bed.Exec(racer, "cat", "/tmp/leak")
	t.Logf("%v of two exec probes every second: the racer saw %d processes of its pid namespace, read %d bytes through /proc/N/root",
		time.Since(began).Round(time.Second), n, len(out))
	if strings.Contains(string(out), strings.TrimSpace(string(hostID))) {
		t.Fatalf("the container read the host's /etc/machine-id through a probe process:\n%s", out)
	}
	if min := int(race / time.Second); n < min {
		t.Fatalf("the racer saw %d probe processes in %v, want at least %d: the race was not run", n, race, min)
	}
	if runs := d.sumWhere("probelet_exec_direct_total", nil); runs == 0 {
		t.Fatal("no exec probe ran through the direct helper: the race tested ExecSync")
	}
}

// TestExecHelperWithoutSetpcapFailsClosed: probelet runs with CAP_SETPCAP
// out of its bounding set, so the helper cannot narrow the command's
// bounding set to the container's. A direct exec probe must not run with
// the wider set: its CapBnd equals ExecSync's, because the helper refused
// (a fallback counted under reason "setup") and the runtime ran it.
func TestExecHelperWithoutSetpcapFailsClosed(t *testing.T) {
	t.Parallel() // functional, no timing bound of its own: beside the others
	bed := testbed.Start(t)
	d := startProbeletUnder(t, bed, []string{"setpriv", "--bounding-set", "-setpcap", "--"},
		"--exec-mode", "direct", "--runtime-state-dir", filepath.Join(bed.Dir(), "state"))
	a := runApp(t, bed, appSpec{name: "capbnd", cmd: sleeper, probes: probespec.ContainerProbes{
		Readiness: execProbe(1, 1, "sh", "-c", "grep CapBnd /proc/self/status; exit 1")}})
	out, code, err := bed.Exec(a.ctr, "grep", "CapBnd", "/proc/self/status")
	if err != nil || code != 0 {
		t.Fatalf("ExecSync: exit %d, %v", code, err)
	}
	want := strings.TrimSpace(string(out))
	eventually(t, 30*time.Second, "the probe's CapBnd", func() (bool, string) {
		c, _ := d.ctr(a.ctr)
		got := strings.TrimSpace(c.Probes["readiness"].LastOutput)
		return got != "", got
	})
	c, _ := d.ctr(a.ctr)
	if got := strings.TrimSpace(c.Probes["readiness"].LastOutput); got != want {
		t.Errorf("the probe ran with %q, ExecSync with %q", got, want)
	}
	for _, e := range d.logsMatching("Exec probes of this container go through the runtime") {
		t.Logf("fallback: %s: %s", e.str("reason"), e.str("detail"))
	}
	if n, _ := d.sample("probelet_exec_direct_fallbacks_total", map[string]string{"reason": "setup"}); n == 0 {
		t.Errorf("no fallback counted under reason setup: the helper did not refuse")
	}
	refused := false
	for _, e := range d.logsMatching("Exec probes of this container go through the runtime") {
		refused = refused || strings.Contains(e.str("detail"), "cannot drop it without CAP_SETPCAP")
	}
	if !refused {
		t.Error("the fallback was not the helper's refusal to keep a wider bounding set")
	}
}
