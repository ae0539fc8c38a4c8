package killguard_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/probelet/probelet/internal/testutil"
	"github.com/probelet/probelet/killguard"
	"github.com/probelet/probelet/prober"
)

var t0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

// inner is the real killer behind the guard: it records what went through.
type inner struct {
	mu    sync.Mutex
	order []string
}

func (k *inner) KillContainer(_ context.Context, kill prober.Kill, report chan<- prober.KillOutcome) {
	k.mu.Lock()
	k.order = append(k.order, kill.ContainerID)
	k.mu.Unlock()
	report <- prober.KillOutcome{Kind: prober.KillIssued}
	report <- prober.KillOutcome{Kind: prober.KillDone}
}

func (k *inner) killed() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]string(nil), k.order...)
}

// env is a guard on a fake clock with a census the test sets.
type env struct {
	t      *testing.T
	g      *killguard.Guard
	inner  *inner
	clock  *clocktesting.FakeClock
	mu     sync.Mutex
	census killguard.Census
	told   map[string][]string                // container → deferral reasons told
	done   map[string]chan prober.KillOutcome // each kill's final outcome
	// pinned are containers whose probe does not fail on its own; the
	// others fail at every step, as the engine would tell the guard.
	pinned map[string]bool
}

func start(t *testing.T, cfg killguard.Config, opts ...killguard.Option) *env {
	t.Helper()
	e := &env{t: t, inner: &inner{}, clock: clocktesting.NewFakeClock(t0), census: killguard.Census{Probed: 20},
		told: map[string][]string{}, done: map[string]chan prober.KillOutcome{}, pinned: map[string]bool{}}
	g, err := killguard.New(e.inner, cfg, append([]killguard.Option{killguard.WithClock(e.clock)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	e.g = g
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() {
		stopped <- g.Run(ctx, func() killguard.Census {
			e.mu.Lock()
			defer e.mu.Unlock()
			return e.census
		})
	}()
	t.Cleanup(func() { cancel(); <-stopped })
	return e
}

func (e *env) setCensus(failing int) {
	e.mu.Lock()
	e.census.Failing = failing
	e.mu.Unlock()
}

// kill asks for a kill of id decided at decided, in the background, and
// reads what the guard reports as the engine does.
func (e *env) kill(ctx context.Context, id string, decided time.Time) {
	done := make(chan prober.KillOutcome, 1)
	e.mu.Lock()
	e.done[id] = done
	e.mu.Unlock()
	report := make(chan prober.KillOutcome, 1)
	go func() {
		defer close(report)
		e.g.KillContainer(ctx, prober.Kill{ContainerID: id, Decided: decided}, report)
	}()
	go func() {
		var last prober.KillOutcome
		for o := range report {
			if o.Kind == prober.KillDeferred {
				e.mu.Lock()
				e.told[id] = append(e.told[id], o.Reason)
				e.mu.Unlock()
			}
			last = o
		}
		done <- last
	}()
}

// step moves the clock by d; every probe not pinned has failed again by
// then.
func (e *env) step(d time.Duration) {
	at := e.clock.Now().Add(d)
	e.mu.Lock()
	for id := range e.done {
		if !e.pinned[id] {
			e.g.ProbeFailed(id, at)
		}
	}
	e.mu.Unlock()
	e.clock.Step(d)
}

func (e *env) waitKilled(want ...string) {
	e.t.Helper()
	testutil.WaitFor(e.t, "kills "+strings.Join(want, ","), func() bool { return len(e.inner.killed()) >= len(want) })
	if got := e.inner.killed(); strings.Join(got, ",") != strings.Join(want, ",") {
		e.t.Fatalf("killed %v, want %v", got, want)
	}
}

func (e *env) waitState(want killguard.State) {
	e.t.Helper()
	testutil.WaitFor(e.t, "state "+want.String(), func() bool {
		st, _ := e.g.State()
		return st == want
	})
}

func (e *env) waitTold(id, substr string) {
	e.t.Helper()
	testutil.WaitFor(e.t, id+" deferred: "+substr, func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		r := e.told[id]
		return len(r) > 0 && strings.Contains(r[len(r)-1], substr)
	})
}

func TestNormalKillsGoAtOnceUntilTheBurstIsSpent(t *testing.T) {
	e := start(t, killguard.Default()) // burst 5, then 1/s
	ids := []string{"a", "b", "c", "d", "e", "f", "g"}
	for i, id := range ids[:6] {
		e.kill(context.Background(), id, t0.Add(time.Duration(i)*time.Millisecond))
		if i < 5 {
			e.waitKilled(ids[:i+1]...) // at once: the burst
		}
	}
	e.waitTold("f", "kill rate limit: 5 at once, then 1 per 1s")
	e.kill(context.Background(), "g", t0.Add(time.Second))
	e.waitTold("g", "kill rate limit")
	e.step(time.Second)
	e.waitKilled(ids[:6]...)
	e.step(time.Second)
	e.waitKilled(ids...)
}

func TestFullDisruptionPausesAndRecoveryCancels(t *testing.T) {
	e := start(t, killguard.Default())
	e.setCensus(18) // 18 of 20: ≥ 0.55
	ctxA, cancelA := context.WithCancel(context.Background())
	e.kill(ctxA, "a", t0)
	e.kill(context.Background(), "b", t0.Add(time.Millisecond))
	e.waitTold("a", "node in FullDisruption, 18 of 20 pods failing liveness since 10:00:00")
	e.waitTold("b", "FullDisruption")
	e.step(time.Minute)
	if k := e.inner.killed(); len(k) != 0 {
		t.Fatalf("killed %v during a full disruption", k)
	}
	// a's probe recovers: the engine cancels its kill, which never goes.
	cancelA()
	if o := <-e.done["a"]; o.Kind != prober.KillCancelled || !errors.Is(o.Err, context.Canceled) {
		t.Fatalf("a cancelled kill ended %v (%v), want Cancelled", o.Kind, o.Err)
	}
	// The node is Normal again: b, still failing, goes with its next
	// failure.
	e.setCensus(1)
	e.step(time.Second)
	e.waitTold("b", "node in Normal since 10:01:01, 1 of 20 pods failing liveness: waiting for the probe to fail again")
	e.step(time.Second)
	e.waitKilled("b")
}

// As an outage ends the probes recover a period at a time: a held kill
// whose probe has not failed since the node calmed down waits for it to
// fail again (and is cancelled by the engine if it succeeds instead).
func TestHeldKillWaitsForAFreshFailure(t *testing.T) {
	e := start(t, killguard.Default())
	e.setCensus(20)
	e.mu.Lock()
	e.pinned["a"] = true // last failed at the decision
	e.mu.Unlock()
	e.kill(context.Background(), "a", t0)
	e.waitTold("a", "FullDisruption")
	e.setCensus(10) // half recovered: PartialDisruption, a token to spend
	e.step(time.Second)
	e.waitTold("a", "node in PartialDisruption since 10:00:01, 10 of 20 pods failing liveness: waiting for the probe to fail again before killing")
	e.step(5 * time.Second)
	if k := e.inner.killed(); len(k) != 0 {
		t.Fatalf("killed %v before the probe failed again", k)
	}
	e.g.ProbeFailed("a", e.clock.Now())
	e.step(time.Second)
	e.waitKilled("a")
}

func TestPartialDisruptionUsesTheSecondaryRate(t *testing.T) {
	cfg := killguard.Default() // partial ≥ 0.30: 1 per 30 s
	e := start(t, cfg)
	e.setCensus(8) // 8 of 20 = 0.40
	e.kill(context.Background(), "a", t0)
	e.waitKilled("a") // the secondary bucket holds one
	e.kill(context.Background(), "b", t0.Add(time.Millisecond))
	e.waitTold("b", "node in PartialDisruption, 8 of 20 pods failing liveness since 10:00:00: kills go at 1 per 30s")
	e.step(20 * time.Second)
	if k := e.inner.killed(); len(k) != 1 {
		t.Fatalf("killed %v after 20 s, want one per 30 s", k)
	}
	e.step(10 * time.Second)
	e.waitKilled("a", "b")
}

func TestQueueOrderAndDeduplication(t *testing.T) {
	e := start(t, killguard.Default())
	e.setCensus(20) // FullDisruption: everything waits
	e.kill(context.Background(), "late", t0.Add(time.Second))
	e.kill(context.Background(), "early", t0)
	e.waitTold("late", "FullDisruption")
	e.waitTold("early", "FullDisruption")
	// A container is queued once.
	again := make(chan prober.KillOutcome, 1)
	e.g.KillContainer(context.Background(), prober.Kill{ContainerID: "early"}, again)
	if o := <-again; o.Kind != prober.KillFailed || !errors.Is(o.Err, killguard.ErrQueued) {
		t.Fatalf("a second kill of a queued container ended %v (%v), want Failed with ErrQueued", o.Kind, o.Err)
	}
	// PartialDisruption lets one through (the secondary bucket's token):
	// the oldest decision, whatever the order the kills arrived in, once
	// its probe failed again.
	e.setCensus(8)
	e.step(time.Second)
	e.waitTold("early", "waiting for the probe to fail again")
	e.step(time.Second)
	e.waitKilled("early")
	e.waitTold("late", "PartialDisruption")
	e.step(30 * time.Second)
	e.waitKilled("early", "late")
}

func TestCeilingBoundsTheWait(t *testing.T) {
	cfg := killguard.Default()
	cfg.Ceiling = 5 * time.Minute
	e := start(t, cfg)
	e.setCensus(20)
	e.kill(context.Background(), "a", t0)
	e.waitTold("a", "FullDisruption")
	e.step(4 * time.Minute)
	if k := e.inner.killed(); len(k) != 0 {
		t.Fatalf("killed %v before the ceiling", k)
	}
	e.step(time.Minute)
	e.waitKilled("a")
}

func TestBudgetHoldsLikeADeferral(t *testing.T) {
	allow := false
	var mu sync.Mutex
	e := start(t, killguard.Default(), killguard.WithBudget(func(k prober.Kill) string {
		mu.Lock()
		defer mu.Unlock()
		if allow {
			return ""
		}
		return "would take default/web below its PodDisruptionBudget (0 disruptions allowed)"
	}))
	e.kill(context.Background(), "a", t0)
	e.waitTold("a", "PodDisruptionBudget")
	mu.Lock()
	allow = true
	mu.Unlock()
	e.step(time.Second)
	e.waitKilled("a")
}

// A secondary rate of 0 pauses kills in a partial disruption as in a full
// one: not even a first token.
func TestZeroSecondaryRatePausesPartialDisruption(t *testing.T) {
	cfg := killguard.Default()
	cfg.SecondaryRate = 0
	e := start(t, cfg)
	e.setCensus(8)
	e.kill(context.Background(), "a", t0)
	e.waitTold("a", "node in PartialDisruption, 8 of 20 pods failing liveness since 10:00:00: kills paused (secondary rate 0)")
	// Up to the ceiling, which bounds this wait too (and raced the check
	// when the step went past it).
	e.step(cfg.Ceiling - 2*time.Second)
	if k := e.inner.killed(); len(k) != 0 {
		t.Fatalf("killed %v in a partial disruption with secondary rate 0", k)
	}
	e.setCensus(0)
	e.step(time.Second)
	e.waitState(killguard.Normal)
	e.step(time.Second) // the probe has failed again since
	e.waitKilled("a")
}

// Every state change the census makes is followed, both ways.
func TestStateFollowsTheCensus(t *testing.T) {
	e := start(t, killguard.Default())
	for _, step := range []struct {
		failing int
		want    killguard.State
	}{
		{6, killguard.PartialDisruption},
		{11, killguard.FullDisruption},
		{10, killguard.PartialDisruption},
		{5, killguard.Normal},
		{20, killguard.FullDisruption},
		{0, killguard.Normal},
	} {
		e.setCensus(step.failing)
		e.step(time.Second)
		testutil.WaitFor(t, fmt.Sprintf("%s at %d of 20 failing", step.want, step.failing), func() bool {
			st, _ := e.g.State()
			return st == step.want
		})
	}
}

func TestConfigValidation(t *testing.T) {
	bad := killguard.Default()
	bad.Rate, bad.Burst, bad.PartialThreshold, bad.UnhealthyThreshold, bad.Ceiling = 0, 0, 0.9, 0.5, 0
	err := bad.Validate()
	for _, want := range []string{"rate: 0 must be positive", "burst: 0 must be", "partial-threshold: 0.9 must not exceed the unhealthy threshold 0.5", "ceiling: 0s"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to mention %q", err, want)
		}
	}
	if err := killguard.Default().Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	for name, o := range map[string]killguard.Option{
		"nil clock": killguard.WithClock(nil), "nil logger": killguard.WithLogger(nil),
		"nil metrics": killguard.WithMetrics(nil), "nil budget": killguard.WithBudget(nil),
	} {
		if _, err := killguard.New(&inner{}, killguard.Default(), o); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
}
