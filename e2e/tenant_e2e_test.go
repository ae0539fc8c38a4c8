//go:build e2e

package e2e_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/probelet/probelet/internal/testbed"
	"github.com/probelet/probelet/probespec"
)

// Hostile tenants (issue 26): each test runs one attack beside a
// well-behaved victim and fails when the attack works.

// victimApp is the ordinary pod: readiness at period 1 s,
// failureThreshold 1, and TCP liveness at period 1 s, failureThreshold 3.
func victimApp(t *testing.T, bed *testbed.Bed, cmd []string) app {
	t.Helper()
	return runApp(t, bed, appSpec{name: "victim", cmd: cmd, probes: probespec.ContainerProbes{
		Readiness: tcpProbe(appPort, 1, 1),
		Liveness:  tcpProbe(appPort, 1, 3),
	}})
}

// victimOnTime says why the victim's readiness is not fresh and Ready,
// or "" when it is: probed within a period and a half, and Ready.
func victimOnTime(d *daemon, v app) string {
	return victimProbedWithin(d, v, 1500*time.Millisecond)
}

// tenantSecret stands for a secretKeyRef value the runtime resolved into
// the container's environment.
const tenantSecret = "s3cr3t-T0KEN-4f9a2c"

// TestTenantSecretNeverExpands: an exec probe referring to $(TOKEN), whose
// value the runtime holds from a Secret, node-only and again after a
// probelet restart: the value shows in no process's argv on the host, in
// no log line, socket answer or history file.
func TestTenantSecretNeverExpands(t *testing.T) {
	bed := testbed.Start(t)
	d := startProbelet(t, bed)
	victim := victimApp(t, bed, webApp)
	probes := probespec.ContainerProbes{Readiness: execProbe(1, 1, "sh", "-c", "sleep 3; : $(TOKEN)")}
	probes.Readiness.TimeoutSeconds = 1
	anno, err := jsonString(probespec.PodProbes{"thief": probes})
	if err != nil {
		t.Fatal(err)
	}
	_, thief, err := bed.RunPod(testbed.PodSpec{
		Name:        "thief",
		Annotations: map[string]string{probespec.AnnotationProbes: anno},
		Container: testbed.ContainerSpec{Name: "thief", Command: sleeper, Ports: httpPort,
			Env: map[string]string{"TOKEN": tenantSecret}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for run := 1; run <= 2; run++ {
		if run == 2 {
			d.stop()
			d.start()
		}
		eventually(t, 15*time.Second, "the thief's probe to have timed out", func() (bool, string) {
			c, _ := d.ctr(thief)
			r := c.Probes["readiness"]
			return r.Result == "Failure" && r.LastOutput != "", fmt.Sprintf("%+v", r)
		})
		asWritten, seen := false, 0
		during(t, 6*time.Second, "no process on the host with the secret in its argv", func() (bool, string) {
			pid, found := argvHolding(tenantSecret)
			seen++
			if msg := victimOnTime(d, victim); msg != "" {
				return false, msg
			}
			return !found, fmt.Sprintf("pid %d has it in its command line", pid)
		})
		t.Logf("run %d: %d samples of every process's command line, none held the secret", run, seen)
		for _, args := range [][]string{
			{"ps", "-o", "json"}, {"describe", thief[:12], "-o", "json"}, {"why", thief[:12]},
			{"describe", thief[:12]}, {"events", "-o", "json"},
		} {
			out, errOut, _ := d.probectl(args...)
			if strings.Contains(out+errOut, tenantSecret) {
				t.Errorf("probectl %s shows the secret:\n%s", strings.Join(args, " "), out)
			}
			asWritten = asWritten || strings.Contains(out, "$(TOKEN)")
		}
		if !asWritten {
			t.Errorf("run %d: no answer shows the command as written (node-only, nothing expands)", run)
		}
	}
	d.stop()
	// probelet's state dir is the bed's containerd state dir too: read
	// probelet's own files there (history), not the containers' bundles,
	// whose config.json holds the environment by design.
	history, _ := filepath.Glob(filepath.Join(bed.Dir(), "state", "history*"))
	if len(history) == 0 {
		t.Errorf("no history file in %s: nothing to check", filepath.Join(bed.Dir(), "state"))
	}
	checkNoFileHolds(t, tenantSecret, append(history, d.logPath, filepath.Join(bed.Dir(), "probelet-1.log"))...)
}

// argvHolding is a process whose command line holds s, if any.
func argvHolding(s string) (int, bool) {
	for _, pid := range allPIDs() {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err == nil && bytes.Contains(b, []byte(s)) {
			return pid, true
		}
	}
	return 0, false
}

// checkNoFileHolds fails for every file under paths whose content holds s.
func checkNoFileHolds(t *testing.T, s string, paths ...string) {
	t.Helper()
	for _, root := range paths {
		_ = filepath.Walk(root, func(path string, info os.FileInfo, err error) error {
			if err != nil || !info.Mode().IsRegular() { // a FIFO would block the read
				return nil
			}
			b, err := os.ReadFile(path)
			if err == nil && bytes.Contains(b, []byte(s)) {
				t.Errorf("%s holds the secret", path)
			}
			return nil
		})
	}
}

// TestTenantPinnedFailuresDoNotHoldKills: four pods whose liveness fails
// for good under failureThreshold 1000000 (never restarted) do not put the
// node in a disruption: the victim, whose liveness fails, is killed within
// failureThreshold × period + 1 period of its first failure, as the kubelet
// kills it.
func TestTenantPinnedFailuresDoNotHoldKills(t *testing.T) {
	s := &storm{t: t, bed: testbed.Start(t)}
	s.d = startProbelet(t, s.bed)
	for i := range 4 {
		runApp(t, s.bed, appSpec{name: fmt.Sprintf("pinned-%d", i), cmd: sleeper, probes: probespec.ContainerProbes{
			Liveness: execProbe(1, 1000000, "false")}})
	}
	victim := runApp(t, s.bed, appSpec{name: "victim", cmd: stormApp, probes: probespec.ContainerProbes{
		Readiness: tcpProbe(appPort, 1, 1),
		Liveness:  tcpProbe(appPort, 1, stormThreshold),
	}})
	s.apps = []app{victim}
	s.waitListening()
	eventually(t, 20*time.Second, "the pinned pods failing liveness", func() (bool, string) {
		failing := 0
		for _, c := range s.d.ps() {
			if strings.HasPrefix(c.PodName, "pinned-") && c.Probes["liveness"].Consecutive >= 3 {
				failing++
			}
		}
		return failing == 4, fmt.Sprintf("%d of 4", failing)
	})
	breakAt := s.arm(s.apps, time.Hour)
	// The first failure comes after the break, so a kill this soon after
	// the break is within the bound after the first failure.
	bound := stormThreshold*stormPeriod + stormPeriod
	kill := s.waitKills(1, breakAt)[victim.ctr]
	t.Logf("victim killed %v after it stopped listening (bound %v), beside 4 pinned liveness failures",
		kill.Sub(breakAt).Round(time.Millisecond), bound)
	if kill.Sub(breakAt) > bound {
		t.Errorf("victim killed %v after its break, want within %v", kill.Sub(breakAt), bound)
	}
	if out, _, _ := s.d.probectl("why", victim.ctr[:12]); strings.Contains(out, "kill deferred") {
		t.Errorf("the victim's kill was deferred:\n%s", out)
	}
}

// termHostile is what a tenant's probe prints to take over an operator's
// terminal: OSC 52 (set the clipboard) and a screen clear. It fails every
// other run, so watch has changes to show.
const termHostile = `printf '\033]52;c;cHduZWQ=\a\033[2J\177'; if [ -f /tmp/f ]; then rm /tmp/f; exit 1; fi; touch /tmp/f`

// TestTenantEscapesNeverReachTheTerminal: a probe output with OSC 52 and
// CSI sequences reaches no terminal through probectl why, describe,
// events or watch: no byte below 0x20 but newline and tab, no DEL.
func TestTenantEscapesNeverReachTheTerminal(t *testing.T) {
	bed := testbed.Start(t)
	d := startProbelet(t, bed)
	victim := victimApp(t, bed, webApp)
	a := runApp(t, bed, appSpec{name: "painter", cmd: sleeper, probes: probespec.ContainerProbes{
		Readiness: execProbe(1, 1, "sh", "-c", termHostile)}})
	eventually(t, 15*time.Second, "the painter's output", func() (bool, string) {
		c, _ := d.ctr(a.ctr)
		return strings.Contains(c.Probes["readiness"].LastOutput, "\x1b]52;c;"), fmt.Sprintf("%+v", c.Probes["readiness"])
	})
	outputs := map[string]string{}
	for _, args := range [][]string{{"why", a.ctr[:12]}, {"describe", a.ctr[:12]}, {"events"}} {
		out, errOut, code := d.probectl(args...)
		if code != 0 {
			t.Fatalf("probectl %s: exit %d: %s", strings.Join(args, " "), code, errOut)
		}
		outputs[strings.Join(args, " ")] = out + errOut
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	watch, _ := exec.CommandContext(ctx, bins.probectl, "--socket", d.socket, "watch").Output()
	outputs["watch"] = string(watch)
	shown := false // the hostile output reached probectl at all
	for cmd, out := range outputs {
		if i := bytes.IndexFunc([]byte(out), func(r rune) bool {
			return (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r <= 0x9f)
		}); i >= 0 {
			t.Errorf("probectl %s wrote %q to the terminal:\n%q", cmd, out[i], out)
		}
		shown = shown || strings.Contains(out, `\x1b]52;c;`)
	}
	if !shown {
		t.Errorf("no probectl output shows the escape escaped: the attack did not reach probectl:\n%v", outputs)
	}
	if msg := victimOnTime(d, victim); msg != "" {
		t.Error(msg)
	}
}

// headerBomb answers every connection on 8080 with a 200 whose one header
// is 8 MiB long.
var headerBomb = shell(`trap "exit 0" TERM; while true; do
	{ printf 'HTTP/1.1 200 OK\r\nX-Pad: '; head -c 8388608 /dev/zero | tr '\0' a; printf '\r\nContent-Length: 0\r\n\r\n'; } | nc -l -p 8080
done`)

// maxTenantRSS is the bound on probelet's memory under attack.
const maxTenantRSS = 150 << 20

// TestTenantHeaderBombsCostBoundedMemory: 20 HTTP targets answering 8 MiB
// of headers every second leave probelet running, under 150 MiB of RSS,
// and the victim probed on time.
func TestTenantHeaderBombsCostBoundedMemory(t *testing.T) {
	bed := testbed.Start(t)
	d := startProbelet(t, bed)
	victim := victimApp(t, bed, webApp)
	var bombs []app
	for i := range 20 {
		bombs = append(bombs, runApp(t, bed, appSpec{name: fmt.Sprintf("bomb-%02d", i), cmd: headerBomb, probes: probespec.ContainerProbes{
			Readiness: httpProbe("/", 1, 1)}}))
	}
	// Between two connections nc is not listening (and under load it may
	// still be writing the last 8 MiB), so a run may be refused: a bomb
	// counts once any run in its history read its headers and failed.
	hit := map[string]bool{}
	eventually(t, 60*time.Second, "every bomb probed and failing on its headers", func() (bool, string) {
		for _, b := range bombs {
			for _, r := range d.describe(b.ctr).Probes["readiness"].History {
				if strings.Contains(r.Output+r.Error, "headers exceeded") {
					hit[b.ctr] = true
				}
			}
		}
		return len(hit) == len(bombs), fmt.Sprintf("%d of %d", len(hit), len(bombs))
	})
	peak := holdsUnderAttack(t, d, victim)
	t.Logf("20 header bombs for 20 s: probelet's RSS peaked at %.1f MiB (bound %d MiB)", float64(peak)/(1<<20), maxTenantRSS>>20)
}

// execBomb prints 15 MB, more than the 1 MiB probelet reads of an ExecSync
// reply and far more than the kubelet's 10 KiB of output, and fails.
var execBomb = []string{"sh", "-c", "head -c 15000000 /dev/zero; exit 1"}

// TestTenantExecOutputBombsCostBoundedMemory: 10 exec probes printing 15 MB
// every second leave probelet running, under 150 MiB of RSS, and the victim
// probed on time, through the runtime (each run a prober error naming the
// bound, never a result) and through the direct helper (a Failure by the
// exit code, 10 KiB of output kept).
func TestTenantExecOutputBombsCostBoundedMemory(t *testing.T) {
	for _, tc := range []struct {
		mode string
		// seen says whether a bomb's recent run shows the bound held.
		seen func(runView) bool
	}{
		{"runtime", func(r runView) bool { return strings.Contains(r.Error, "over 1024 KiB") }},
		{"direct", func(r runView) bool { return r.Result == "Failure" && len(r.Output) <= 10<<10 }},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			bed := testbed.Start(t)
			d := startProbelet(t, bed, "--exec-mode", tc.mode, "--runtime-state-dir", filepath.Join(bed.Dir(), "state"))
			victim := victimApp(t, bed, webApp)
			// Through the runtime, containerd takes over a second to gather
			// 15 MB from the shim: a 1 s timeout would end the run before
			// its reply reached probelet, and test nothing.
			bomb := execProbe(1, 1, execBomb...)
			bomb.TimeoutSeconds = 10
			var bombs []app
			for i := range 10 {
				bombs = append(bombs, runApp(t, bed, appSpec{name: fmt.Sprintf("exec-bomb-%02d", i), cmd: sleeper,
					probes: probespec.ContainerProbes{Readiness: bomb}}))
			}
			eventually(t, 60*time.Second, "every bomb run with its output bounded", func() (bool, string) {
				n := 0
				var last runView
				for _, b := range bombs {
					h := d.describe(b.ctr).Probes["readiness"].History
					if len(h) > 0 && tc.seen(h[len(h)-1]) {
						n++
					} else if len(h) > 0 {
						last = h[len(h)-1]
					}
				}
				return n == len(bombs), fmt.Sprintf("%d of %d; one not yet: %+v", n, len(bombs), last)
			})
			peak := holdsUnderAttack(t, d, victim)
			t.Logf("10 exec bombs of 15 MB a second for 20 s, --exec-mode %s: probelet's RSS peaked at %.1f MiB (bound %d MiB)",
				tc.mode, float64(peak)/(1<<20), maxTenantRSS>>20)
		})
	}
}

// attackHold is how long holdsUnderAttack watches an attack.
const attackHold = 20 * time.Second

// holdsUnderAttack checks for attackHold that probelet keeps running, under
// maxTenantRSS, with the victim on time, and that each of also holds at
// every poll; it returns the RSS peak.
func holdsUnderAttack(t *testing.T, d *daemon, victim app, also ...func() (ok bool, state string)) int64 {
	t.Helper()
	var peak int64
	during(t, attackHold, "probelet running, under the RSS bound, the victim on time", func() (bool, string) {
		if d.exited() {
			return false, "probelet exited"
		}
		rss := vmRSS(d.cmd.Process.Pid)
		peak = max(peak, rss)
		if rss >= maxTenantRSS {
			return false, fmt.Sprintf("RSS %d MiB", rss>>20)
		}
		if why := victimOnTime(d, victim); why != "" {
			return false, why
		}
		for _, cond := range also {
			if ok, state := cond(); !ok {
				return false, state
			}
		}
		return true, ""
	})
	return peak
}

// vmRSS is pid's resident set in bytes, 0 when unreadable.
func vmRSS(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int64
			_, _ = fmt.Sscan(v, &kb)
			return kb << 10
		}
	}
	return 0
}

// countingListener accepts on addr and counts the connections it got.
type countingListener struct {
	ln      net.Listener
	accepts atomic.Int64
}

func listenCounting(t *testing.T, addr string) *countingListener {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	l := &countingListener{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.accepts.Add(1)
			_ = c.Close()
		}
	}()
	t.Cleanup(func() { _ = ln.Close() })
	return l
}

func (l *countingListener) port() int { return l.ln.Addr().(*net.TCPAddr).Port }

// bridgeIPv4 is the node's address on the bed's pod network.
func bridgeIPv4(t *testing.T, bed *testbed.Bed) string {
	t.Helper()
	ifc, err := net.InterfaceByName(bed.Bridge())
	if err != nil {
		t.Fatal(err)
	}
	addrs, err := ifc.Addrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	t.Fatalf("bridge %s has no IPv4 address: %v", bed.Bridge(), addrs)
	return ""
}

// TestTenantProbeHostReachesOnlyItsPod: probes naming the node's 127.0.0.1,
// the node's address on the pod network, localhost or a zero-padded
// loopback make no connection at all and are spec errors naming the field
// (socket, log, events); a hostNetwork pod may still probe 127.0.0.1; the
// victim's readiness stays on time throughout.
func TestTenantProbeHostReachesOnlyItsPod(t *testing.T) {
	bed := testbed.Start(t)
	d := startProbelet(t, bed)
	victim := victimApp(t, bed, webApp)
	loopback := listenCounting(t, "127.0.0.1:0")
	bridge := listenCounting(t, net.JoinHostPort(bridgeIPv4(t, bed), "0"))
	hostnet := listenCounting(t, "127.0.0.1:0")

	hostProbe := func(http bool, host string, port int) *corev1.Probe {
		p := tcpProbe(port, 1, 1)
		p.TCPSocket.Host = host
		if http {
			p.ProbeHandler = corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Host: host, Path: "/", Port: intstr.FromInt32(int32(port))}}
		}
		return p
	}
	attackers := []struct {
		name   string
		probes probespec.ContainerProbes
		fields []string
	}{
		{"ssrf-loopback", probespec.ContainerProbes{Readiness: hostProbe(true, "127.0.0.1", loopback.port())},
			[]string{"readinessProbe.httpGet.host", `"127.0.0.1"`}},
		{"ssrf-bridge", probespec.ContainerProbes{Liveness: hostProbe(false, bridgeIPv4(t, bed), bridge.port())},
			[]string{"livenessProbe.tcpSocket.host", bridgeIPv4(t, bed)}},
		{"ssrf-localhost", probespec.ContainerProbes{Readiness: hostProbe(false, "localhost", loopback.port())},
			[]string{"readinessProbe.tcpSocket.host", "a hostname is never one"}},
		{"ssrf-padded", probespec.ContainerProbes{Startup: hostProbe(true, "127.000.000.001", loopback.port())},
			[]string{"startupProbe.httpGet.host", "127.000.000.001"}},
	}
	var apps []app
	for _, a := range attackers {
		apps = append(apps, runApp(t, bed, appSpec{name: a.name, cmd: sleeper, probes: a.probes}))
	}
	for i, a := range attackers {
		c := waitSpecError(t, d, apps[i])
		for _, f := range a.fields {
			if !strings.Contains(c.SpecError, f) {
				t.Errorf("%s: spec error %q does not name %s", a.name, c.SpecError, f)
			}
		}
		if len(c.Probes) != 0 {
			t.Errorf("%s: probes %v, want none run", a.name, c.Probes)
		}
		checkSpecErrorShown(t, d, apps[i], c.SpecError)
	}
	during(t, 5*time.Second, "no connection from the attackers, the victim on time", func() (bool, string) {
		if n, m := loopback.accepts.Load(), bridge.accepts.Load(); n+m > 0 {
			return false, fmt.Sprintf("%d connections to 127.0.0.1, %d to the bridge address", n, m)
		}
		return victimOnTime(d, victim) == "", victimOnTime(d, victim)
	})
	if out, _, _ := d.probectl("events", "-o", "json"); !strings.Contains(out, "ProbeSpecRejected") ||
		!strings.Contains(out, "readinessProbe.httpGet.host") {
		t.Errorf("probectl events shows no ProbeSpecRejected event naming the field:\n%s", out)
	}

	// The exception: a hostNetwork pod shares the node's network already.
	anno, err := jsonString(probespec.PodProbes{"hostnet": {Readiness: hostProbe(false, "127.0.0.1", hostnet.port())}})
	if err != nil {
		t.Fatal(err)
	}
	_, hostCtr, err := bed.RunPod(testbed.PodSpec{
		Name: "hostnet", HostNetwork: true, Annotations: map[string]string{probespec.AnnotationProbes: anno},
		Container: testbed.ContainerSpec{Name: "hostnet", Command: sleeper},
	})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, "the hostNetwork pod ready through 127.0.0.1", func() (bool, string) {
		c, _ := d.ctr(hostCtr)
		return c.Ready && c.SpecError == "" && hostnet.accepts.Load() > 0,
			fmt.Sprintf("%+v, %d connections", c, hostnet.accepts.Load())
	})
	if n, m := loopback.accepts.Load(), bridge.accepts.Load(); n+m > 0 {
		t.Errorf("%d connections to 127.0.0.1 and %d to the bridge address from the attackers", n, m)
	}
	if msg := victimOnTime(d, victim); msg != "" {
		t.Error(msg)
	}
	t.Logf("attackers: 0 connections; hostNetwork pod: %d connections to 127.0.0.1", hostnet.accepts.Load())
}

// silentListener listens on appPort, accepts every connection and never
// answers (the test image's grpc-health in its hang mode, as the soak's
// hanging targets), so every probe of it hangs until its timeout.
var silentListener = shell(`trap "exit 0" TERM; grpc-health -port 8080 -hang & wait`)

// hungProbe is an HTTP GET of a silent listener with an hour's timeout.
func hungProbe(failures int32) *corev1.Probe {
	p := httpProbe("/", 1, failures)
	p.TimeoutSeconds = 3600
	return p
}

// TestTenantHungProbesDelayNobody: attackers whose probes hang — HTTP GETs
// of silent listeners with timeoutSeconds 3600, more of them than the
// engine's runner pool, and exec probes whose child keeps stdout open —
// beside the victim. The victim's probes keep their period grid (start
// drift p99 under 5% of the period), and its readiness follows its app
// within period × failureThreshold + 1 s both ways.
func TestTenantHungProbesDelayNobody(t *testing.T) {
	const attackers, execAttackers = 40, 4 // 80 hung HTTP probes: more than the pool's 64 runners
	bed := testbed.Start(t)
	d := startProbelet(t, bed)
	// The victim's readiness is an HTTP GET: a TCP probe answered from the
	// eBPF table never waits for a runner at all.
	victim := runApp(t, bed, appSpec{name: "victim", cmd: webApp, probes: probespec.ContainerProbes{
		Readiness: httpProbe("/", 1, 1), Liveness: tcpProbe(appPort, 1, 3)}})
	for i := range attackers {
		runApp(t, bed, appSpec{name: fmt.Sprintf("hang-%02d", i), cmd: silentListener, probes: probespec.ContainerProbes{
			Readiness: hungProbe(1), Liveness: hungProbe(1 << 20)}})
	}
	for i := range execAttackers {
		// The child holds stdout 20 s a run: long past the pool's
		// patience, short of the bed's teardown.
		keepOpen := execProbe(1, 1, "sh", "-c", "sleep 20 & echo detached")
		keepOpen.TimeoutSeconds = 3600
		runApp(t, bed, appSpec{name: fmt.Sprintf("hang-exec-%d", i), cmd: sleeper, probes: probespec.ContainerProbes{Readiness: keepOpen}})
	}
	eventually(t, 60*time.Second, "every attacker's probes started and hanging", func() (bool, string) {
		n, other := 0, ""
		for _, c := range d.ps() {
			if !strings.HasPrefix(c.PodName, "hang-") {
				continue
			}
			// A run ends every period unless one hangs (the first may
			// have found the listener not up yet).
			if last := c.Probes["readiness"].LastProbeTime; c.Started && (last == nil || time.Since(*last) > 3*time.Second) {
				n++
			} else {
				other = fmt.Sprintf("%s: %+v", c.PodName, c.Probes)
			}
		}
		return n == attackers+execAttackers, fmt.Sprintf("%d of %d hanging; one not: %s", n, attackers+execAttackers, other)
	})
	if hung := d.gauge("probelet_probe_runners"); hung < 2*attackers {
		t.Fatalf("probelet_probe_runners %v: the attack holds fewer probes than it should (%d HTTP)", hung, 2*attackers)
	}

	// The victim's probes keep their grid while the attack holds.
	windowStart := time.Now()
	seen := map[time.Time]bool{}
	during(t, 15*time.Second, "the victim probed on time", func() (bool, string) {
		for _, at := range victimRuns(t, d, victim, windowStart) { // the history keeps the last 10
			seen[at] = true
		}
		s := victimOnTime(d, victim)
		return s == "", s
	})
	runs := slices.SortedFunc(maps.Keys(seen), time.Time.Compare)
	if len(runs) < 12 {
		t.Fatalf("%d victim readiness runs in the 15 s window, want one a second", len(runs))
	}
	p99 := startDriftP99(runs, time.Second)
	t.Logf("victim readiness start drift with %d hung probes: p99 %.1f%% of its 1 s period (%d intervals)", 2*attackers+execAttackers, 100*p99, len(runs)-1)
	if p99 > 0.05 {
		t.Errorf("victim readiness start drift p99 %.1f%% of the period, want under 5%%; runs %v", 100*p99, runs)
	}

	// Its readiness follows its app both ways within period × threshold + 1 s.
	stopped := time.Now()
	mustExec(t, bed, victim.ctr, "killall", "httpd")
	notReady := firstRunWith(t, d, victim, stopped, "Failure")
	mustExec(t, bed, victim.ctr, "httpd", "-p", "8080", "-h", "/var/www")
	restarted := time.Now()
	ready := firstRunWith(t, d, victim, restarted, "Success")
	for what, took := range map[string]time.Duration{"not ready": notReady.Sub(stopped), "ready again": ready.Sub(restarted)} {
		if took > 2*time.Second {
			t.Errorf("the victim's readiness turned %s %v after its app changed, want within period × threshold + 1 s (2 s)", what, took)
		}
	}
}

// startDriftP99 is the 99th percentile of how far the intervals between
// runs (sorted, two at least) stray from period, as a fraction of it.
func startDriftP99(runs []time.Time, period time.Duration) float64 {
	drift := make([]float64, 0, len(runs)-1)
	for i := 1; i < len(runs); i++ {
		drift = append(drift, math.Abs((runs[i].Sub(runs[i-1])-period).Seconds()/period.Seconds()))
	}
	slices.Sort(drift)
	return drift[int(math.Ceil(0.99*float64(len(drift))))-1]
}

// victimRuns is the victim's readiness run times since since, oldest
// first, from its history.
func victimRuns(t *testing.T, d *daemon, v app, since time.Time) []time.Time {
	t.Helper()
	var runs []time.Time
	for _, r := range d.describe(v.ctr).Probes["readiness"].History {
		if !r.Time.Before(since) {
			runs = append(runs, r.Time)
		}
	}
	return runs
}

// firstRunWith waits for the victim's first readiness run with result since
// since, and returns its time.
func firstRunWith(t *testing.T, d *daemon, v app, since time.Time, result string) time.Time {
	t.Helper()
	var at time.Time
	eventually(t, 10*time.Second, "a victim readiness "+result, func() (bool, string) {
		for _, r := range d.describe(v.ctr).Probes["readiness"].History {
			if !r.Time.Before(since) && r.Result == result {
				at = r.Time
				return true, ""
			}
		}
		return false, "none yet"
	})
	return at
}

// TestTenantAnnotationChurnCostsBoundedMemory: 180 pods created and
// removed, 20 alive at a time, each with a distinct 250 KiB annotation the
// node cache keeps while the pod lives and a distinct probelet.io/probes:
// five in six a valid one of 60 KiB (parsed, held by the spec memo within
// its byte bound: 150 of them are 8.8 MiB, past the memo's 8), the sixth
// one of 250 KiB, over the 64 KiB limit (a spec error, never parsed). They
// leave probelet running, under 150 MiB of RSS, and the victim probed on
// time throughout.
func TestTenantAnnotationChurnCostsBoundedMemory(t *testing.T) {
	bed := testbed.Start(t)
	d := startProbelet(t, bed)
	victim := victimApp(t, bed, webApp)
	waitReady(t, d, victim, true, "")
	const pods, alive, churners = 180, 20, 4
	pad := func(i, n int) string { return fmt.Sprintf("%06d", i) + strings.Repeat("x", n-6) }
	annotations := func(i int) map[string]string {
		a := map[string]string{
			probespec.AnnotationProbes: `{"app": {"readinessProbe": {"exec": {"command": ["` + pad(i, 250<<10) + `"]}}}}`,
			"example.com/blob":         pad(i, 250<<10),
		}
		if i%6 != 0 {
			a[probespec.AnnotationProbes] = `{"app": {"readinessProbe": {"exec": {"command": ["true", "` + pad(i, 60<<10) + `"]}}}}`
		}
		return a
	}
	runs0, _ := d.sample("probelet_nri_events_total", map[string]string{"event": "RunPodSandbox"})
	errs := make(chan error, churners)
	for c := range churners {
		go func() {
			var live []string
			var err error
			for i := c; i < pods && err == nil; i += churners {
				var id string
				id, err = bed.RunSandbox(testbed.PodSpec{Name: fmt.Sprintf("churn-%03d", i), HostNetwork: true, Annotations: annotations(i)})
				live = append(live, id)
				if len(live) > alive/churners && err == nil {
					err = bed.RemovePod(live[0])
					live = live[1:]
				}
			}
			for _, id := range live {
				if id != "" && err == nil {
					err = bed.RemovePod(id)
				}
			}
			errs <- err
		}()
	}
	var peak int64
	for done := 0; done < churners; {
		select {
		case err := <-errs:
			if err != nil {
				t.Fatalf("churning pods: %v", err)
			}
			done++
		case <-time.After(pollEvery):
		}
		if d.exited() {
			t.Fatal("probelet exited")
		}
		rss := vmRSS(d.cmd.Process.Pid)
		peak = max(peak, rss)
		if rss >= maxTenantRSS {
			t.Fatalf("probelet's RSS reached %d MiB", rss>>20)
		}
		if why := victimOnTime(d, victim); why != "" {
			t.Fatal(why)
		}
	}
	// The attack reached probelet: it heard of every sandbox.
	if runs, _ := d.sample("probelet_nri_events_total", map[string]string{"event": "RunPodSandbox"}); runs-runs0 < pods {
		t.Fatalf("probelet heard of %v sandboxes, want %d", runs-runs0, pods)
	}
	t.Logf("%d pods with 250 KiB annotations, %d alive at a time: probelet's RSS peaked at %.1f MiB (bound %d MiB)",
		pods, alive, float64(peak)/(1<<20), maxTenantRSS>>20)
}
