//go:build e2e

package e2e_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/probelet/probelet/internal/testbed"
	"github.com/probelet/probelet/probespec"
)

// frozenApps containers, frozenCycles times frozen while each has a run in
// flight, then held frozen for frozenRuns new runs in all.
const frozenApps, frozenCycles, frozenRuns = 10, 5, 100

// TestExecDirectIntoFrozenContainers: containers whose cgroups are frozen
// (as `ctr task pause`, a checkpoint or a cgroup manager freezes them),
// first while each has a direct exec probe running (the helper then kills
// a command that cannot die until thawed), then for 100 new runs (which
// find the container paused and fail at once, as runc's exec does): no
// helper process outlives its probe's timeout by 5 s, none piles up, the
// victim beside them stays on time, and once thawed nothing of the
// probes' stays in the containers.
func TestExecDirectIntoFrozenContainers(t *testing.T) {
	bed := testbed.Start(t)
	d := startProbelet(t, bed, "--exec-mode", "direct", "--runtime-state-dir", filepath.Join(bed.Dir(), "state"))
	victim := victimApp(t, bed, webApp)
	const timeout = 1
	// Every run outlasts its timeout: one is always in flight.
	probe := execProbe(1, 100000, "sleep", "5")
	probe.TimeoutSeconds = timeout
	var apps []app
	var freezers []string
	for i := range frozenApps {
		a := runApp(t, bed, appSpec{name: fmt.Sprintf("frozen-%02d", i), cmd: sleeper, probes: probespec.ContainerProbes{Readiness: probe}})
		apps = append(apps, a)
		freezers = append(freezers, freezerOf(t, bed, a.ctr))
	}
	waitReady(t, d, victim, true, "")
	setAll := func(state string) {
		t.Helper()
		for _, f := range freezers {
			if err := os.WriteFile(filepath.Join(f, "freezer.state"), []byte(state), 0o644); err != nil {
				t.Errorf("%s %s: %v", state, f, err)
			}
		}
	}
	t.Cleanup(func() { setAll("THAWED") })

	serve := children(d.cmd.Process.Pid)
	limit := time.Duration(timeout)*time.Second + 5*time.Second
	peak := 0
	// watch fails the test on a helper past its limit or a late victim,
	// and returns how many helpers run.
	watch := func() int {
		if d.exited() {
			t.Fatal("probelet exited")
		}
		var helpers []int
		for _, s := range serve {
			helpers = append(helpers, children(s)...)
		}
		peak = max(peak, len(helpers))
		for _, pid := range helpers {
			if age := processAge(pid); age > limit {
				t.Fatalf("helper process %d has run for %v, past its probe's timeout + 5 s", pid, age.Round(time.Second))
			}
		}
		if why := victimOnTime(d, victim); why != "" {
			t.Fatal(why)
		}
		return len(helpers)
	}
	for cycle := range frozenCycles {
		eventually(t, 10*time.Second, "a run in flight in every container", func() (bool, string) {
			n := watch()
			return n >= frozenApps, fmt.Sprintf("%d helpers", n)
		})
		setAll("FROZEN")
		// The runs in flight time out and their helpers give up on the
		// commands they killed a grace later; watch meanwhile.
		for end := time.Now().Add(limit); time.Now().Before(end); time.Sleep(pollEvery) {
			watch()
		}
		if cycle < frozenCycles-1 {
			setAll("THAWED")
		}
	}
	// A run into a paused container errors, as ExecSync does with runc's
	// refusal (the probe's result stays as it was, as the kubelet's does):
	// the history (10 runs a probe) of every container full of them is
	// the 100 runs.
	eventually(t, 3*time.Minute, fmt.Sprintf("%d runs into the frozen containers", frozenRuns), func() (bool, string) {
		watch()
		n := 0
		for _, a := range apps {
			for _, r := range d.describe(a.ctr).Probes["readiness"].History {
				if strings.Contains(r.Error, "cannot exec in a paused container") {
					n++
				}
			}
		}
		return n >= frozenRuns, fmt.Sprintf("%d refused as paused in the histories", n)
	})
	if peak > 3*frozenApps {
		t.Errorf("%d helper processes at once for %d containers: they pile up", peak, frozenApps)
	}
	t.Logf("%d containers frozen %d times with a run in flight, then %d runs while frozen: at most %d helper processes at once, none older than %v",
		frozenApps, frozenCycles, frozenRuns, peak, limit)

	// What the freeze holds of the probes: commands killed while frozen
	// (and, had a helper joined a frozen cgroup, the helper's processes).
	// Thawed, they die at once; the runs that start after are new.
	held := map[int]string{}
	for _, f := range freezers {
		for _, pid := range cgroupPIDs(t, f) {
			if cmd := cmdline(pid); cmd == "sleep 5" || processName(pid) == "probelet-exec" {
				held[pid] = cmd
			}
		}
	}
	setAll("THAWED")
	eventually(t, limit, fmt.Sprintf("the %d probe processes the freeze held gone", len(held)), func() (bool, string) {
		var left []string
		for pid, cmd := range held {
			if cmdline(pid) == cmd {
				left = append(left, fmt.Sprintf("%d %q", pid, cmd))
			}
		}
		return len(left) == 0, strings.Join(left, ", ")
	})
	t.Logf("thawed: the %d probe processes the freeze held died", len(held))
	if n := d.sum("probelet_exec_direct_fallbacks_total"); n != 0 {
		t.Errorf("%v probes went to the runtime; the log says why:\n%s", n, d.logTail(40))
	}
}

// cmdline is pid's argv joined by spaces ("" when it is gone).
func cmdline(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}

// freezerOf is the directory of the (v1) freezer cgroup of container id's
// init process.
func freezerOf(t *testing.T, bed *testbed.Bed, id string) string {
	t.Helper()
	out, err := bed.Crictl("inspect", id)
	if err != nil {
		t.Fatalf("crictl inspect %s: %v", id, err)
	}
	var v struct {
		Info struct {
			Pid int `json:"pid"`
		} `json:"info"`
	}
	if err := json.Unmarshal(out, &v); err != nil || v.Info.Pid == 0 {
		t.Fatalf("crictl inspect %s: no pid (%v):\n%s", id, err, out)
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", v.Info.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		f := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(f) == 3 && slices.Contains(strings.Split(f[1], ","), "freezer") {
			return filepath.Join("/sys/fs/cgroup/freezer", f[2])
		}
	}
	t.Fatalf("container %s's init is in no freezer cgroup:\n%s", id, data)
	return ""
}

// children are the live processes whose parent is pid.
func children(pid int) []int {
	var out []int
	for _, p := range allPIDs() {
		if procStat(p).ppid == pid {
			out = append(out, p)
		}
	}
	return out
}

// processAge is how long pid has run (zero when it is gone).
func processAge(pid int) time.Duration {
	s := procStat(pid)
	up, err := os.ReadFile("/proc/uptime")
	if s.start == 0 || err != nil {
		return 0
	}
	secs, _ := strconv.ParseFloat(strings.Fields(string(up))[0], 64)
	return time.Duration(secs*float64(time.Second)) - time.Duration(s.start)*10*time.Millisecond
}

// processName is pid's comm ("" when it is gone).
func processName(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(b))
}

// cgroupPIDs are the processes of a (v1) cgroup directory.
func cgroupPIDs(t *testing.T, dir string) []int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}
