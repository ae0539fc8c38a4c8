//go:build e2e

package e2e_test

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/probelet/probelet/internal/testbed"
	"github.com/probelet/probelet/probespec"
)

// Hostile tenants (issue 26), continued: targets that attack probelet's
// own network clients — the HTTP/2 of its gRPC probes, the dial of its TCP
// probes — each beside the victim.

// grpcApp serves grpc.health.v1 on appPort, SERVING.
var grpcApp = shell(`trap "exit 0" TERM; grpc-health -port 8080 & wait`)

// hostileTarget runs the test image's grpc-health on appPort with flags,
// one of its hostile modes.
func hostileTarget(flags string) []string {
	return shell(`trap "exit 0" TERM; grpc-health -port 8080 ` + flags + ` & wait`)
}

// hostileTimeout is the hostile probes' timeoutSeconds: twice their
// period, so a run that waits for its target spans ticks of the victim's
// 1 s grid.
const hostileTimeout = 2

// runSlack is how late a hostile run may end past its timeout: what
// victimOnTime allows the victim, half its 1 s period.
const runSlack = 500 * time.Millisecond

// hostileProbes are a target's readiness and liveness, both h at period
// 1 s with hostileTimeout. Liveness's threshold is never reached: the
// target is never restarted, so the attack never pauses.
func hostileProbes(h corev1.ProbeHandler) probespec.ContainerProbes {
	probe := func(failures int32) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: h, PeriodSeconds: 1, TimeoutSeconds: hostileTimeout, FailureThreshold: failures}
	}
	return probespec.ContainerProbes{Readiness: probe(1), Liveness: probe(1 << 20)}
}

// hostileGRPC are the gRPC-probe targets of
// TestTenantHostileGRPCTargetsHurtNobody (grpc-health's hostile.go), each
// with what every run of its probes must say.
var hostileGRPC = []struct {
	mode, flags, output string
	// waits: the target says nothing the probe can end on, so only the
	// timeout ends each run.
	waits bool
}{
	// PING frames, as fast as the connection takes them: the count of
	// frames a call answers ends it.
	{"ping-flood", "-hostile ping-flood", "the server sent over", false},
	// The reply's headers never ended, CONTINUATION after CONTINUATION:
	// the header list's bound ends the call.
	{"header-flood", "-hostile header-flood", "PROTOCOL_ERROR", false},
	// DATA frames of zeros, the stream never ended: empty messages one
	// after another, and the second is the unary call's error (grpc-go's
	// answer too: it decodes each message as it comes).
	{"data-flood", "-hostile data-flood", "received another message", false},
	// GOAWAY right after SETTINGS, then silence: the call was refused.
	{"goaway", "-hostile goaway", "server is draining the connection", false},
	// Accepts and never writes, not even SETTINGS.
	{"silent", "-hang", "timeout: failed to connect service", true},
}

// TestTenantHostileGRPCTargetsHurtNobody: 20 pods whose gRPC-probe targets
// attack probelet's HTTP/2 client — PING floods, reply headers or data
// that never end, GOAWAY at once, silence; 4 of each, readiness and
// liveness at period 1 s — beside a victim probed by gRPC too. Every run
// of theirs is a Failure saying what went wrong, over by its timeout;
// probelet stays under 150 MiB of RSS; the victim stays ready and its
// readiness keeps its 1 s grid (start drift p99 under 5% of the period).
func TestTenantHostileGRPCTargetsHurtNobody(t *testing.T) {
	const perMode = 4
	bed := testbed.Start(t)
	// The bounds under test are the quiet client's: grpc-go (--io=std)
	// answers a PING flood until the timeout, as the kubelet's does (README).
	d := startProbelet(t, bed, "--io", "quiet")
	// The victim's readiness goes through the very client under attack.
	victim := runApp(t, bed, appSpec{name: "victim", cmd: grpcApp, probes: probespec.ContainerProbes{
		Readiness: grpcProbe(appPort, 1, 1), Liveness: tcpProbe(appPort, 1, 3)}})
	waitReady(t, d, victim, true, "")
	targets := make([][]app, len(hostileGRPC))
	for i, h := range hostileGRPC {
		for n := range perMode {
			targets[i] = append(targets[i], runApp(t, bed, appSpec{name: fmt.Sprintf("grpc-%s-%d", h.mode, n),
				cmd: hostileTarget(h.flags), probes: hostileProbes(grpcProbe(appPort, 1, 1).ProbeHandler)}))
		}
	}
	eventually(t, 60*time.Second, "every target's probes failing as they should", func() (bool, string) {
		listed := d.ps()
		for i, h := range hostileGRPC {
			if why := failingWith(listed, targets[i], h.output); why != "" {
				return false, why
			}
		}
		return true, ""
	})

	since := time.Now()
	v := holdsOnGrid(t, d, victim)
	for i, h := range hostileGRPC {
		runs, longest := checkHostileRuns(t, d, targets[i], since, h.output, h.waits)
		t.Logf("%-12s %d runs, the longest %v (timeout %ds): %s", h.mode, runs, longest.Round(time.Millisecond),
			hostileTimeout, d.describe(targets[i][0].ctr).Probes["readiness"].LastOutput)
	}
	t.Logf("%d hostile gRPC targets for %v: %v", len(hostileGRPC)*perMode, attackHold, v)
}

// frameFloodOutput is what a run against a flood of frames that carry next
// to nothing says (quietio/grpcwire's meter).
const frameFloodOutput = "frames carrying under 1024 bytes each"

// TestTenantGRPCFrameFloodsCostNoMoreThanPings (issue 41): frames that
// need no answer — empty DATA, empty CONTINUATION, WINDOW_UPDATE — cost
// the prober no more than the PING flood whose answers are capped. First
// 21 targets flood PINGs, then 21 flood the three others (7 of each), at
// readiness and liveness period 1 s beside a victim probed by gRPC: every
// run of theirs fails by its own bound and well before its timeout, the
// victim keeps its 1 s grid in both rounds, and probelet's CPU in the
// second round is at most the first's (within the rounds' noise, 10% and
// a hundredth of a CPU). Unbounded, each empty-frame call read until the
// byte budget: tens of milliseconds of CPU a run.
func TestTenantGRPCFrameFloodsCostNoMoreThanPings(t *testing.T) {
	bed := testbed.Start(t)
	// The bounds under test are the quiet client's: grpc-go (--io=std)
	// answers a PING flood until the timeout, as the kubelet's does (README).
	d := startProbelet(t, bed, "--io", "quiet")
	victim := runApp(t, bed, appSpec{name: "victim", cmd: grpcApp, probes: probespec.ContainerProbes{
		Readiness: grpcProbe(appPort, 1, 1), Liveness: tcpProbe(appPort, 1, 3)}})
	waitReady(t, d, victim, true, "")
	rounds := []struct {
		name  string
		modes map[string]string // each mode's output
		each  int
	}{
		{"pings", map[string]string{"ping-flood": "the server sent over 100 pings and settings"}, 21},
		{"frames needing no answer", map[string]string{
			"empty-data-flood":         frameFloodOutput,
			"empty-continuation-flood": frameFloodOutput,
			"window-update-flood":      frameFloodOutput,
		}, 7},
	}
	cpu := make([]float64, len(rounds))
	for i, r := range rounds {
		targets := map[string][]app{}
		for _, mode := range slices.Sorted(maps.Keys(r.modes)) {
			for n := range r.each {
				targets[mode] = append(targets[mode], runApp(t, bed, appSpec{name: fmt.Sprintf("grpc-%s-%d", mode, n),
					cmd: hostileTarget("-hostile " + mode), probes: hostileProbes(grpcProbe(appPort, 1, 1).ProbeHandler)}))
			}
		}
		eventually(t, 60*time.Second, "every target's probes failing as they should", func() (bool, string) {
			listed := d.ps()
			for mode, output := range r.modes {
				if why := failingWith(listed, targets[mode], output); why != "" {
					return false, why
				}
			}
			return true, ""
		})
		since := time.Now()
		v := holdsOnGrid(t, d, victim)
		cpu[i] = v.agentCPU
		for mode, output := range r.modes {
			runs, longest := checkHostileRuns(t, d, targets[mode], since, output, false)
			// A bound, not the timeout, ends each run.
			if longest > hostileTimeout*time.Second/2 {
				t.Errorf("%s: a run took %v: the flood was read until the timeout, not bounded", mode, longest)
			}
			t.Logf("%-24s %d runs, the longest %v", mode, runs, longest.Round(time.Millisecond))
		}
		t.Logf("round %q, %d targets: %v", r.name, len(r.modes)*r.each, v)
		for _, as := range targets {
			for _, a := range as {
				if err := bed.RemovePod(a.pod); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if limit := 1.1*cpu[0] + 0.01; cpu[1] > limit {
		t.Errorf("probelet used %.1f%% of a CPU on the floods needing no answer, over the PING flood's %.1f%% (limit %.1f%%)",
			100*cpu[1], 100*cpu[0], 100*limit)
	}
	t.Logf("probelet's CPU: %.1f%% of a CPU under the PING flood, %.1f%% under the floods needing no answer", 100*cpu[0], 100*cpu[1])
}

// TestTenantUnansweredSYNsLeakNothing: under --tcp-mode dial, 10 pods whose
// probed port drops every SYN (an accept queue full and never accepted:
// the handshake never completes), readiness and liveness at period 1 s,
// beside the victim. Every run of theirs is a Failure by "i/o timeout",
// each dial in SYN_SENT for its timeout as the kernel tells; probelet
// holds no more sockets in SYN_SENT toward them than their probes in
// flight, none once they are gone, and then no more sockets than before
// the attack; the victim stays ready and its readiness, dialled too, keeps
// its 1 s grid.
func TestTenantUnansweredSYNsLeakNothing(t *testing.T) {
	const hostile = 10
	const inFlight = 2 * hostile // a run at most per probe
	const timeout = hostileTimeout * time.Second
	bed := testbed.Start(t)
	d := startProbelet(t, bed, "--tcp-mode", "dial")
	pid := d.cmd.Process.Pid
	victim := victimApp(t, bed, webApp)
	c := waitReady(t, d, victim, true, "")
	if m := c.Probes["readiness"].Method; m != "dial" {
		t.Fatalf("the victim's readiness answered by %q under --tcp-mode dial", m)
	}
	// Sockets, not all open files: the deadline wheel's timer file opens
	// at the first probe that waits and stays, the state file comes and
	// goes. A victim run's socket may linger up to the kubelet's 1 s
	// SO_LINGER, and probectl's connections close on their own time: the
	// baseline spans a few of the victim's periods.
	_, before := openSockets(t, pid, 3*time.Second)
	censusBefore := fdCensus(pid)

	var targets []app
	addrs := map[netip.AddrPort]bool{}
	for i := range hostile {
		a := runApp(t, bed, appSpec{name: fmt.Sprintf("syn-drop-%d", i), cmd: hostileTarget("-hostile full-backlog"),
			probes: hostileProbes(tcpProbe(appPort, 1, 1).ProbeHandler)})
		targets = append(targets, a)
		addrs[netip.AddrPortFrom(netip.MustParseAddr(a.ip), appPort)] = true
	}
	const timedOut = "i/o timeout"
	eventually(t, 60*time.Second, "every target's probes timing out", func() (bool, string) {
		why := failingWith(d.ps(), targets, timedOut)
		return why == "", why
	})

	// A socket kept past its run would still be connecting (the kernel
	// retries a SYN for over 2 minutes) and add up run after run.
	since := time.Now()
	synPeak := 0
	dials := watchDials(pid, addrs)
	v := holdsOnGrid(t, d, victim, func() (bool, string) {
		states := socketsToward(t, pid, addrs)
		if states["SYN_SENT"] > inFlight {
			// /proc/net/tcp is not read at one instant: a run's socket
			// closed and the next run's (at once, the last having
			// overrun its period) opened during one read both show. A
			// socket kept open shows in the next read too.
			states = socketsToward(t, pid, addrs)
		}
		synPeak = max(synPeak, states["SYN_SENT"])
		if states["SYN_SENT"] > inFlight {
			return false, fmt.Sprintf("sockets toward the targets %v: more in SYN_SENT than their %d probes", states, inFlight)
		}
		return true, ""
	})
	// A run's record starts when a runner takes the dial over from the
	// scheduling goroutine, a moment after its SYN: the kernel's account
	// is the one of the dial's whole life.
	runs, longest := checkHostileRuns(t, d, targets, since, timedOut, false)
	lives, resolution := dials.lifetimes()
	if len(lives) < runs/2 {
		t.Fatalf("%d dials seen from start to end, for %d runs", len(lives), runs)
	}
	for _, l := range lives {
		if l+2*resolution < timeout || l > timeout+runSlack {
			t.Errorf("a dial lived %v in SYN_SENT (seen every %v at worst), want its timeout %v", l, resolution, timeout)
		}
	}

	// Gone, their last runs end by their timeout at the latest.
	for _, a := range targets {
		if err := bed.RemovePod(a.pod); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, timeout+runSlack, "no socket left in SYN_SENT toward the targets", func() (bool, string) {
		states := socketsToward(t, pid, addrs)
		return states["SYN_SENT"] == 0, fmt.Sprint(states)
	})
	after, _ := openSockets(t, pid, 3*time.Second)
	if after > before {
		t.Errorf("probelet holds %d sockets after the attack, %d before it; its files now: %s; before: %s",
			after, before, fdCensus(pid), censusBefore)
	}
	if why := victimOnTime(d, victim); why != "" {
		t.Error(why)
	}
	t.Logf("%d targets dropping SYNs for %v under --tcp-mode dial: %d runs, each %q, the longest recorded %v (timeout %ds); "+
		"%d dials lived %v to %v in SYN_SENT (seen every %v at worst); in SYN_SENT toward them at most %d (probes %d), none after; "+
		"probelet's sockets %d before, %d after",
		hostile, attackHold, runs, timedOut, longest.Round(time.Millisecond), hostileTimeout,
		len(lives), slices.Min(lives).Round(time.Millisecond), slices.Max(lives).Round(time.Millisecond), resolution.Round(time.Millisecond),
		synPeak, inFlight, before, after)
	t.Logf("probelet's files before: %s; after: %s", censusBefore, fdCensus(pid))
	t.Logf("%v", v)
}

// failingWith says why a target's probes, as listed, are not failing with
// output, or "" when every one is: both last runs said output, and
// readiness is a Failure (liveness's threshold is never reached, so its
// published result stays Success).
func failingWith(listed []ctrView, targets []app, output string) string {
	byID := map[string]ctrView{}
	for _, c := range listed {
		byID[c.ContainerID] = c
	}
	for _, a := range targets {
		for _, kind := range []string{"readiness", "liveness"} {
			r := byID[a.ctr].Probes[kind]
			if !strings.Contains(r.LastOutput, output) || (kind == "readiness" && r.Result != "Failure") {
				return fmt.Sprintf("%s %s: %+v", a.name, kind, r)
			}
		}
	}
	return ""
}

// checkHostileRuns checks every run since since of each target's readiness
// and liveness that its history still keeps (the last 10): a Failure whose
// output holds output, over by its timeout (plus runSlack) and, when
// waits, not before it. It returns how many runs it checked and the
// longest.
func checkHostileRuns(t *testing.T, d *daemon, targets []app, since time.Time, output string, waits bool) (runs int, longest time.Duration) {
	t.Helper()
	const timeout = hostileTimeout * time.Second
	for _, a := range targets {
		probes := d.describe(a.ctr).Probes
		for _, kind := range []string{"readiness", "liveness"} {
			n := 0
			for _, r := range probes[kind].History {
				if r.Time.Before(since) {
					continue
				}
				n++
				took, err := time.ParseDuration(r.Duration)
				switch {
				case err != nil:
					t.Fatalf("%s %s: run duration %q: %v", a.name, kind, r.Duration, err)
				case r.Result != "Failure" || !strings.Contains(r.Output, output):
					t.Errorf("%s %s: a run %+v, want a Failure saying %q", a.name, kind, r, output)
				case took > timeout+runSlack || (waits && took < timeout):
					t.Errorf("%s %s: a run took %v, want %v at most (timeoutSeconds %d)%s", a.name, kind, took,
						timeout+runSlack, hostileTimeout, map[bool]string{true: " and no less"}[waits])
				}
				longest = max(longest, took)
			}
			if n == 0 {
				t.Errorf("%s %s: no run in the %v watched", a.name, kind, time.Since(since).Round(time.Second))
			}
			runs += n
		}
	}
	return runs, longest
}

// attackView is what holdsOnGrid saw.
type attackView struct {
	peakRSS  int64
	driftP99 float64       // of the victim's readiness starts, as a fraction of its period
	gap      time.Duration // the longest between two of the victim's readiness runs
	// agentCPU is probelet's CPU seconds a second; nodeBusy the share of
	// the node's CPUs busy, whoever with.
	agentCPU, nodeBusy float64
}

func (v attackView) String() string {
	return fmt.Sprintf("probelet's RSS peaked at %.1f MiB (bound %d MiB), it used %.0f%% of a CPU, the node's %d CPUs were %.0f%% busy; "+
		"victim readiness start drift p99 %.1f%% of its 1 s period, longest interval %v",
		float64(v.peakRSS)/(1<<20), maxTenantRSS>>20, 100*v.agentCPU, runtime.NumCPU(), 100*v.nodeBusy,
		100*v.driftP99, v.gap.Round(time.Millisecond))
}

// holdsOnGrid is holdsUnderAttack gathering the victim's readiness runs
// meanwhile (its history keeps only the last 10): they must keep the 1 s
// grid, start drift p99 under 5% of the period, as in
// TestTenantHungProbesDelayNobody.
func holdsOnGrid(t *testing.T, d *daemon, victim app, also ...func() (bool, string)) attackView {
	t.Helper()
	since, seen := time.Now(), map[time.Time]bool{}
	pid := d.cmd.Process.Pid
	cpu0 := cpuSeconds(pid)
	busy0, total0 := nodeBusy()
	defer func() {
		if t.Failed() { // a late victim: its last runs, and how long each took
			for _, r := range d.describe(victim.ctr).Probes["readiness"].History {
				t.Logf("victim readiness run at %s: %s in %s %s", r.Time.Format("15:04:05.000"), r.Result, r.Duration, r.Output+r.Error)
			}
		}
	}()
	gather := func() (bool, string) {
		for _, at := range victimRuns(t, d, victim, since) {
			seen[at] = true
		}
		return true, ""
	}
	v := attackView{peakRSS: holdsUnderAttack(t, d, victim, append(also, gather)...)}
	busy1, total1 := nodeBusy()
	v.agentCPU = (cpuSeconds(pid) - cpu0) / time.Since(since).Seconds()
	v.nodeBusy = (busy1 - busy0) / (total1 - total0)
	runs := slices.SortedFunc(maps.Keys(seen), time.Time.Compare)
	if want := int(0.8 * attackHold.Seconds()); len(runs) < want {
		t.Fatalf("%d victim readiness runs in the %v watched, want one a second", len(runs), attackHold)
	}
	for i := 1; i < len(runs); i++ {
		v.gap = max(v.gap, runs[i].Sub(runs[i-1]))
	}
	if v.driftP99 = startDriftP99(runs, time.Second); v.driftP99 > 0.05 {
		t.Errorf("victim readiness start drift p99 %.1f%% of the period, want under 5%%; runs %v", 100*v.driftP99, runs)
	}
	return v
}

// cpuSeconds is pid's user and system CPU time so far (exec_bench's
// procCPU, which builds only with the bench tag).
func cpuSeconds(pid int) float64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	i := strings.LastIndex(string(b), ") ") // past the command, which may hold either
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+2:])) // from field 3, state
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100 // USER_HZ
}

// nodeBusy is the node's CPU time so far, busy and in all, from /proc/stat
// (in USER_HZ ticks: only their ratio counts).
func nodeBusy() (busy, total float64) {
	data, _ := os.ReadFile("/proc/stat")
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
	for i, s := range f[1:] {
		v, _ := strconv.ParseFloat(s, 64)
		total += v
		if i != 3 && i != 4 { // idle, iowait
			busy += v
		}
	}
	return busy, total
}

// dialWatch follows, on a goroutine of its own, every socket in SYN_SENT
// toward the targets by its inode: when it was first and last seen.
type dialWatch struct {
	stop, done  chan struct{}
	first, last map[string]time.Time
	born        map[string]bool // seen in the first sample: born before
	gap         time.Duration   // the longest between two samples
}

// dialTick is how often a dialWatch samples: a hundredth of a second
// against a probe timeout of seconds.
const dialTick = 10 * time.Millisecond

func watchDials(pid int, addrs map[netip.AddrPort]bool) *dialWatch {
	w := &dialWatch{stop: make(chan struct{}), done: make(chan struct{}),
		first: map[string]time.Time{}, last: map[string]time.Time{}, born: map[string]bool{}}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(dialTick)
		defer tick.Stop()
		var prev time.Time
		for {
			all, _ := tcpSockets(pid)
			now := time.Now()
			for _, s := range all {
				if addrs[s.remote] && s.state == "SYN_SENT" {
					if _, ok := w.first[s.inode]; !ok {
						w.first[s.inode] = now
						w.born[s.inode] = prev.IsZero()
					}
					w.last[s.inode] = now
				}
			}
			if !prev.IsZero() {
				w.gap = max(w.gap, now.Sub(prev))
			}
			prev = now
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
		}
	}()
	return w
}

// lifetimes stops the watch and returns how long each dial it saw from
// birth to end stayed in SYN_SENT, short by less than two of resolution,
// the longest between two samples.
func (w *dialWatch) lifetimes() (lives []time.Duration, resolution time.Duration) {
	close(w.stop)
	<-w.done
	if len(w.last) == 0 {
		return nil, w.gap
	}
	end := slices.MaxFunc(slices.Collect(maps.Values(w.last)), time.Time.Compare)
	for inode, first := range w.first {
		if last := w.last[inode]; !w.born[inode] && last.Before(end) {
			lives = append(lives, last.Sub(first))
		}
	}
	return lives, w.gap
}

// openSockets samples pid's open sockets for d and returns the fewest and
// the most seen.
func openSockets(t *testing.T, pid int, d time.Duration) (fewest, most int) {
	t.Helper()
	fewest = -1
	during(t, d, "probelet running", func() (bool, string) {
		n, err := countSockets(pid)
		if fewest < 0 || n < fewest {
			fewest = n
		}
		most = max(most, n)
		return err == nil, fmt.Sprint(err)
	})
	return fewest, most
}

// countSockets is how many of pid's open files are sockets.
func countSockets(pid int) (int, error) {
	return countOpenFiles(pid, func(link string) bool { return strings.HasPrefix(link, "socket:") })
}

// countOpenFiles is how many of pid's open files match, by what their
// /proc/PID/fd link names.
func countOpenFiles(pid int, match func(link string) bool) (int, error) {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(dir)
	n := 0
	for _, fd := range fds {
		if l, _ := os.Readlink(dir + "/" + fd.Name()); match(l) {
			n++
		}
	}
	return n, err
}

// socketsToward counts the TCP sockets toward any of addrs in pid's
// network namespace, the node's, by state: only probelet dials the pods
// from there, so each is probelet's, open or orphaned.
func socketsToward(t *testing.T, pid int, addrs map[netip.AddrPort]bool) map[string]int {
	t.Helper()
	all, err := tcpSockets(pid)
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]int{}
	for _, s := range all {
		if addrs[s.remote] {
			states[s.state]++
		}
	}
	return states
}

// tcpSocket is one line of /proc/PID/net/tcp or tcp6.
type tcpSocket struct {
	remote netip.AddrPort
	state  string // tcp_states.h's name
	inode  string
}

// tcpSockets are the TCP sockets of pid's network namespace.
func tcpSockets(pid int) ([]tcpSocket, error) {
	var all []tcpSocket
	for _, file := range []string{"tcp", "tcp6"} {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, file))
		if errors.Is(err, fs.ErrNotExist) && file == "tcp6" {
			continue // a kernel without IPv6
		}
		if err != nil {
			return nil, err
		}
		_, table, _ := strings.Cut(string(data), "\n") // past the header
		for line := range strings.Lines(table) {
			if f := strings.Fields(line); len(f) > 9 {
				remote, _ := procAddr(f[2])
				all = append(all, tcpSocket{remote: remote, state: tcpStates[f[3]], inode: f[9]})
			}
		}
	}
	return all, nil
}

// procAddr parses /proc/net/tcp's ADDR:PORT, hex: the address in 32-bit
// words of the host's byte order (little-endian on the machines the bed
// runs on), the port as a number.
func procAddr(s string) (netip.AddrPort, bool) {
	a, p, _ := strings.Cut(s, ":")
	raw, err := hex.DecodeString(a)
	port, perr := strconv.ParseUint(p, 16, 16)
	if err != nil || perr != nil || len(raw)%4 != 0 {
		return netip.AddrPort{}, false
	}
	for i := 0; i < len(raw); i += 4 {
		slices.Reverse(raw[i : i+4])
	}
	ip, ok := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(ip.Unmap(), uint16(port)), ok
}

// fdCensus is what pid's open files are, by kind (fdKinds), in one line.
func fdCensus(pid int) string { return formatKinds(fdKinds(pid)) }

// fdKinds counts pid's open files by kind: TCP sockets by state, other
// sockets, anonymous inodes, pipes, and files by path.
func fdKinds(pid int) map[string]int {
	states := map[string]string{}
	all, _ := tcpSockets(pid)
	for _, s := range all {
		states[s.inode] = s.state
	}
	kinds := map[string]int{}
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, _ := os.ReadDir(dir)
	for _, fd := range fds {
		l, err := os.Readlink(dir + "/" + fd.Name())
		if err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(l, "socket:["):
			if s, ok := states[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")]; ok {
				l = "tcp " + s
			} else {
				l = "socket"
			}
		case strings.HasPrefix(l, "pipe:["):
			l = "pipe"
		}
		kinds[l]++
	}
	return kinds
}

// formatKinds is a census of open files by kind in one line.
func formatKinds(kinds map[string]int) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		out = append(out, fmt.Sprintf("%s ×%d", k, kinds[k]))
	}
	return strings.Join(out, ", ")
}

// tcpStates names /proc/net/tcp's st column (tcp_states.h).
var tcpStates = map[string]string{"01": "ESTABLISHED", "02": "SYN_SENT", "03": "SYN_RECV", "04": "FIN_WAIT1",
	"05": "FIN_WAIT2", "06": "TIME_WAIT", "07": "CLOSE", "08": "CLOSE_WAIT", "09": "LAST_ACK", "0A": "LISTEN", "0B": "CLOSING"}
