//go:build e2e

package e2e_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/probelet/probelet/internal/testbed"
	"github.com/probelet/probelet/probespec"
)

// stormPods is the node: 20 pods whose TCP liveness (period 1 s,
// failureThreshold 3) breaks together.
const (
	stormPods      = 20
	stormPeriod    = time.Second
	stormThreshold = 3
	stormDown      = 30 * time.Second
	// killGuardStormBound is the documented bound on kills in a storm with
	// the defaults: the census counts a pod once its probe reached its
	// failureThreshold, so the kills decided before it shows the storm go:
	// the burst (--kill-guard-burst 5) in Normal, then the one token a
	// PartialDisruption starts with.
	killGuardStormBound = 5 + 1
)

// stormApp listens on 8080 until it is armed with "T D" in /tmp/breakat:
// at the Unix second T it stops listening for D seconds, then listens
// again and waits to be armed anew. Arming every pod with the same T
// breaks them in the same tenth of a second, whatever the exec latency.
var stormApp = shell(`while true; do
	nc -ll -p 8080 -e true & L=$!
	while [ ! -f /tmp/breakat ]; do sleep 0.2; done
	read T D < /tmp/breakat; rm /tmp/breakat
	while [ "$(date +%s)" -lt "$T" ]; do sleep 0.1; done
	kill $L; sleep "$D"
done`)

// TestKillGuard: with the defaults, 20 liveness probes failing together for
// 30 s kill at most a burst and one more (killGuardStormBound) and nothing after recovery,
// and probectl and the metrics show the deferral; a single failing pod
// among them is then killed as fast as with the guard off; with
// --liveness-action report the storm is reported and nothing killed; with
// --kill-guard off every container is killed, like the kubelet does.
func TestKillGuard(t *testing.T) {
	guarded := newStorm(t, startProbelet)
	guarded.waitLive()

	breakAt := guarded.arm(guarded.apps, stormDown)
	t.Logf("guard on: %d pods stop listening at %s for %v", stormPods, breakAt.Format(time.TimeOnly), stormDown)
	deferral := guarded.watchDeferral(breakAt.Add(stormDown))
	kills := guarded.kills()
	t.Logf("guard on: %d of %d containers killed while all liveness probes failed for %v (bound: %d)",
		len(kills), stormPods, stormDown, killGuardStormBound)
	if len(kills) > killGuardStormBound {
		t.Errorf("guard on: %d kills in the storm, documented bound %d", len(kills), killGuardStormBound)
	}
	if !deferral.shownInPS || !deferral.explained || !deferral.fullDisruption || deferral.deferredTotal < 1 {
		t.Errorf("the deferral was not shown: %+v", deferral)
	}
	guarded.waitLive()
	during(t, 5*stormPeriod, "no kill after the recovery", func() (bool, string) {
		n := len(guarded.kills())
		return n == len(kills), fmt.Sprintf("%d kills, %d before the recovery", n, len(kills))
	})
	if v, _ := guarded.d.sample("probelet_kill_guard_state", map[string]string{"state": "Normal"}); v != 1 {
		t.Errorf("probelet_kill_guard_state{state=Normal} = %v after the recovery", v)
	}

	// One pod fails alone: the node is Normal, the kill goes at once.
	lone := guarded.alive()[0]
	loneBreak := guarded.arm([]app{lone}, time.Hour)
	loneKill := guarded.waitKills(len(kills)+1, loneBreak)[lone.ctr]
	loneDelay := loneKill.Sub(loneBreak)

	// The same node with --liveness-action report, then --kill-guard off.
	unguarded := newStorm(t, func(t *testing.T, bed *testbed.Bed, extra ...string) *daemon {
		return startProbelet(t, bed, append(extra, "--liveness-action=report")...)
	})
	unguarded.waitLive()
	reportBreak := unguarded.arm(unguarded.apps, 2*stormThreshold*stormPeriod)
	// Arming takes seconds; the reports are due failureThreshold periods
	// after the break, not after arming.
	eventually(t, time.Until(reportBreak)+stormThreshold*stormPeriod+10*time.Second, "a WouldRestart report for every container", func() (bool, string) {
		n := len(unguarded.reported())
		return n == stormPods, fmt.Sprintf("%d reported", n)
	})
	if k := unguarded.kills(); len(k) != 0 {
		t.Errorf("--liveness-action report killed %d containers", len(k))
	}
	t.Logf("report: all %d failures reported %v after the break, no kill", stormPods, time.Since(reportBreak).Round(time.Millisecond))
	// A reported container's liveness worker is on hold, as the kubelet's
	// is after a kill, until the container changes: the restart below
	// probes afresh, once every app listens again.
	unguarded.waitListening()
	unguarded.d.stop()
	unguarded.d.args = append(slices.DeleteFunc(unguarded.d.args, func(a string) bool { return a == "--liveness-action=report" }),
		"--kill-guard=off")
	unguarded.d.start()
	unguarded.waitLive()
	offBreak := unguarded.arm(unguarded.apps, stormDown)
	offKills := unguarded.waitKills(stormPods, offBreak)
	var delays []time.Duration
	for _, at := range offKills {
		delays = append(delays, at.Sub(offBreak))
	}
	slices.Sort(delays)
	median := delays[len(delays)/2]
	t.Logf("guard off: all %d killed, %v to %v after the break (median %v); guard on, a lone failure: killed %v after it",
		stormPods, delays[0].Round(time.Millisecond), delays[len(delays)-1].Round(time.Millisecond),
		median.Round(time.Millisecond), loneDelay.Round(time.Millisecond))
	if d := loneDelay - median; d > stormPeriod || d < -stormPeriod {
		t.Errorf("a lone failure with the guard on was killed %v after the break, the guard-off median is %v: want within one period",
			loneDelay, median)
	}
}

// storm is one bed with the storm pods and a probelet.
type storm struct {
	t    *testing.T
	bed  *testbed.Bed
	d    *daemon
	apps []app
}

func newStorm(t *testing.T, start func(*testing.T, *testbed.Bed, ...string) *daemon) *storm {
	t.Helper()
	s := &storm{t: t, bed: testbed.Start(t)}
	s.d = start(t, s.bed)
	for i := range stormPods {
		s.apps = append(s.apps, runApp(t, s.bed, appSpec{name: fmt.Sprintf("storm-%02d", i), cmd: stormApp,
			probes: probespec.ContainerProbes{Liveness: tcpProbe(appPort, int32(stormPeriod/time.Second), stormThreshold)}}))
	}
	return s
}

// alive are the storm pods probelet has not killed.
func (s *storm) alive() []app {
	killed := s.kills()
	var out []app
	for _, a := range s.apps {
		if _, ok := killed[a.ctr]; !ok {
			out = append(out, a)
		}
	}
	return out
}

// waitLive waits until the liveness of every storm pod not killed succeeds.
func (s *storm) waitLive() {
	s.t.Helper()
	want := map[string]bool{}
	for _, a := range s.alive() {
		want[a.ctr] = true
	}
	eventually(s.t, 60*time.Second, "liveness Success in every storm pod", func() (bool, string) {
		live := 0
		for _, c := range s.d.ps() {
			if p, ok := c.Probes["liveness"]; ok && want[c.ContainerID] && p.Result == "Success" && p.Consecutive > 0 && p.KillDeferred == "" {
				live++
			}
		}
		return live == len(want), fmt.Sprintf("%d of %d", live, len(want))
	})
}

// waitListening waits until every storm app listens on its port again,
// seen from inside its container (probelet may not be probing).
func (s *storm) waitListening() {
	s.t.Helper()
	// 8080 is 1F90; 0A is TCP_LISTEN.
	listening := "grep -q ':1F90 [0-9A-F:]* 0A' /proc/net/tcp /proc/net/tcp6"
	eventually(s.t, 60*time.Second, "every storm app listening", func() (bool, string) {
		n := 0
		for _, a := range s.apps {
			if _, code, err := s.bed.Exec(a.ctr, "sh", "-c", listening); err == nil && code == 0 {
				n++
			}
		}
		return n == len(s.apps), fmt.Sprintf("%d of %d", n, len(s.apps))
	})
}

// arm breaks apps at the same second for down and returns that second.
// armExecs is how many arming execs run at once.
const armExecs = 4

func (s *storm) arm(apps []app, down time.Duration) time.Time {
	s.t.Helper()
	// Every exec done before the second comes: a few hundred ms each, more
	// on a loaded node; armExecs at a time, so that a node busy with
	// other work still arms every pod in time.
	at := time.Now().Add(2*time.Second + time.Duration(len(apps))*600*time.Millisecond).Truncate(time.Second).Add(time.Second)
	errs := make([]error, len(apps))
	sem := make(chan struct{}, armExecs)
	var wg sync.WaitGroup
	for i, a := range apps {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			cmd := []string{"sh", "-c", fmt.Sprintf("echo %d %d > /tmp/breakat", at.Unix(), int(down.Seconds()))}
			if out, code, err := s.bed.Exec(a.ctr, cmd...); err != nil || code != 0 {
				errs[i] = fmt.Errorf("exec %q in %.12s: exit %d, %v: %s", cmd, a.ctr, code, err, out)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		s.t.Fatal(err)
	}
	if time.Now().After(at) {
		s.t.Fatalf("arming %d pods took past the break time %s: the node is too slow for a simultaneous break", len(apps), at)
	}
	return at
}

// kills are the containers probelet stopped, with when it issued the stop.
func (s *storm) kills() map[string]time.Time {
	return s.logTimes("Killing container with a grace period", "")
}

// reported are the containers reported as WouldRestart.
func (s *storm) reported() map[string]time.Time {
	return s.logTimes("", "WouldRestart")
}

func (s *storm) logTimes(msg, reason string) map[string]time.Time {
	out := map[string]time.Time{}
	for _, e := range s.d.logs() {
		if (msg != "" && e.str("msg") != msg) || (reason != "" && e.str("reason") != reason) {
			continue
		}
		if _, seen := out[e.str("containerID")]; !seen {
			at, _ := time.Parse(time.RFC3339Nano, e.str("ts"))
			out[e.str("containerID")] = at
		}
	}
	return out
}

// waitKills waits for n kills, due failureThreshold periods after since
// plus a period and the guard's pass.
func (s *storm) waitKills(n int, since time.Time) map[string]time.Time {
	s.t.Helper()
	var k map[string]time.Time
	eventually(s.t, time.Until(since)+stormThreshold*stormPeriod+10*time.Second, fmt.Sprintf("%d kills", n), func() (bool, string) {
		k = s.kills()
		return len(k) >= n, fmt.Sprintf("%d kills", len(k))
	})
	return k
}

// deferral is what the storm showed while the kills waited.
type deferral struct {
	shownInPS, explained, fullDisruption bool
	deferredTotal                        float64
	why                                  string
}

// watchDeferral polls probectl and the metrics until end.
func (s *storm) watchDeferral(end time.Time) deferral {
	s.t.Helper()
	var d deferral
	for time.Now().Before(end) {
		for _, c := range s.d.ps() {
			if c.Probes["liveness"].KillDeferred == "" {
				continue
			}
			d.shownInPS = true
			if !d.explained {
				out, _, _ := s.d.probectl("why", c.ContainerID)
				if strings.Contains(out, "kill deferred: node in FullDisruption") &&
					strings.Contains(out, fmt.Sprintf("of %d pods failing liveness since", stormPods)) {
					d.explained, d.why = true, out
				}
			}
			break
		}
		if v, _ := s.d.sample("probelet_kill_guard_state", map[string]string{"state": "FullDisruption"}); v == 1 {
			d.fullDisruption = true
		}
		d.deferredTotal = s.d.sum("probelet_kills_deferred_total")
		time.Sleep(pollEvery)
	}
	if d.why != "" {
		s.t.Logf("probectl why during the storm:\n%s", d.why)
	}
	return d
}
