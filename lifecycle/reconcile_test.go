package lifecycle_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/probelet/probelet/internal/testutil"
	"github.com/probelet/probelet/lifecycle"
	"github.com/probelet/probelet/node"
)

// fakeRuntime is a CRI account of the node for the reconciler.
type fakeRuntime struct {
	mu       sync.Mutex
	sbs      []lifecycle.ListedSandbox
	ctrs     []lifecycle.Container
	status   map[string]lifecycle.Container
	sbStatus map[string]lifecycle.Sandbox
	listErr  error
	lists    int
	// statusCalls counts ContainerStatus calls.
	statusCalls int
	// failLists makes the first failLists sandbox listings fail.
	failLists int
	// during runs inside ListContainers, after the listing is taken.
	during func()
}

func (f *fakeRuntime) ListSandboxes(context.Context) ([]lifecycle.ListedSandbox, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	if f.lists <= f.failLists {
		return nil, errors.New("CRI not serving yet")
	}
	return f.sbs, f.listErr
}

func (f *fakeRuntime) ListContainers(context.Context) ([]lifecycle.Container, error) {
	if f.during != nil {
		f.during()
	}
	return f.ctrs, nil
}

func (f *fakeRuntime) SandboxStatus(_ context.Context, id string) (lifecycle.Sandbox, error) {
	if sb, ok := f.sbStatus[id]; ok {
		return sb, nil
	}
	return lifecycle.Sandbox{}, errors.New("not found")
}

func (f *fakeRuntime) ContainerStatus(_ context.Context, id string) (lifecycle.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statusCalls++
	if c, ok := f.status[id]; ok {
		return c, nil
	}
	return lifecycle.Container{}, fmt.Errorf("container %s: %w", id, lifecycle.ErrNotFound)
}

// setStatus changes what ContainerStatus answers for c.ID.
func (f *fakeRuntime) setStatus(c lifecycle.Container) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.status == nil {
		f.status = map[string]lifecycle.Container{}
	}
	f.status[c.ID] = c
}

func (f *fakeRuntime) statusCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.statusCalls
}

func (f *fakeRuntime) listCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lists
}

func listed(sb lifecycle.Sandbox, ready bool) lifecycle.ListedSandbox {
	return lifecycle.ListedSandbox{Sandbox: sb, Ready: ready}
}

func TestReconcileFixesDrift(t *testing.T) {
	sbA, sbB := sandbox("sbA", "uidA"), sandbox("sbB", "uidB")
	tests := []struct {
		name      string
		rt        *fakeRuntime
		wantDrift lifecycle.Drift
		wantPods  map[string]map[string]node.ContainerState // UID → container states
	}{{
		name: "in sync",
		rt: &fakeRuntime{sbs: []lifecycle.ListedSandbox{listed(sbA, true), listed(sbB, true)},
			ctrs: []lifecycle.Container{ctr("a1", "sbA", "web", running, t0), ctr("b1", "sbB", "web", running, t0)}},
		wantDrift: lifecycle.Drift{},
		wantPods:  map[string]map[string]node.ContainerState{"uidA": {"a1": running}, "uidB": {"b1": running}},
	}, {
		name:      "vanished pod and container",
		rt:        &fakeRuntime{sbs: []lifecycle.ListedSandbox{listed(sbA, true)}},
		wantDrift: lifecycle.Drift{lifecycle.DriftPodVanished: 1, lifecycle.DriftContainerVanished: 1},
		wantPods:  map[string]map[string]node.ContainerState{"uidA": {}},
	}, {
		name: "missed exit and a missing live container; missing exited ones are not drift",
		rt: &fakeRuntime{
			sbs: []lifecycle.ListedSandbox{listed(sbA, true), listed(sbB, true)},
			ctrs: []lifecycle.Container{ctr("a1", "sbA", "web", exited, t0), ctr("b1", "sbB", "web", running, t0),
				ctr("a9", "sbA", "web", running, t0.Add(time.Second)), ctr("a8", "sbA", "init", exited, t0)},
			status: map[string]lifecycle.Container{
				"a1": ctr("a1", "sbA", "web", exited, t0),
				"a9": {Container: ctr("a9", "", "side", running, t0.Add(time.Second)).Container}, // status without sandbox
			}},
		wantDrift: lifecycle.Drift{lifecycle.DriftContainerState: 1, lifecycle.DriftContainerMissing: 1},
		wantPods: map[string]map[string]node.ContainerState{
			"uidA": {"a1": exited, "a9": running}, "uidB": {"b1": running}},
	}, {
		name: "missing ready pod is added from its status, a stopped one marked",
		rt: &fakeRuntime{
			sbs: []lifecycle.ListedSandbox{listed(sbA, false), listed(sbB, true),
				listed(sandbox("sbC", "uidC"), true), listed(sandbox("sbD", "uidD"), false)},
			ctrs:     []lifecycle.Container{ctr("a1", "sbA", "web", running, t0), ctr("b1", "sbB", "web", running, t0)},
			sbStatus: map[string]lifecycle.Sandbox{"sbC": sandbox("sbC", "uidC")}},
		wantDrift: lifecycle.Drift{lifecycle.DriftPodMissing: 1, lifecycle.DriftPodState: 1},
		wantPods: map[string]map[string]node.ContainerState{
			"uidA": {"a1": running}, "uidB": {"b1": running}, "uidC": {}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.cache.UpdateContainer(t0, sbA, ctr("a1", "sbA", "web", running, t0))
			e.cache.UpdateContainer(t0, sbB, ctr("b1", "sbB", "web", running, t0))
			e.clock.Step(time.Second)
			r, err := lifecycle.NewReconciler(e.cache, tt.rt, 5*time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			d, err := r.Once(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(d, tt.wantDrift) {
				t.Errorf("drift = %v, want %v", d, tt.wantDrift)
			}
			got := map[string]map[string]node.ContainerState{}
			for _, p := range e.cache.Pods() {
				got[p.UID] = states(p)
			}
			if !reflect.DeepEqual(got, tt.wantPods) {
				t.Errorf("cache = %v, want %v", got, tt.wantPods)
			}
			for kind, n := range tt.wantDrift {
				if v := testutil.Metric(t, e.reg, "probelet_lifecycle_reconcile_drift_total", map[string]string{"kind": kind}); v != float64(n) {
					t.Errorf("drift metric %s = %v, want %d", kind, v, n)
				}
			}
		})
	}
}

func TestReconcileRespectsEventsDuringListing(t *testing.T) {
	e := newEnv(t)
	sbA := sandbox("sbA", "uidA")
	e.cache.UpdateContainer(t0, sbA, ctr("a1", "sbA", "web", running, t0))
	e.cache.UpdateContainer(t0, sbA, ctr("gone", "sbA", "old", running, t0))
	e.clock.Step(time.Second)
	rt := &fakeRuntime{
		sbs: []lifecycle.ListedSandbox{listed(sbA, true)},
		// The listing predates a2 and still shows "gone" running.
		ctrs:   []lifecycle.Container{ctr("a1", "sbA", "web", running, t0), ctr("gone", "sbA", "old", running, t0)},
		status: map[string]lifecycle.Container{"gone": ctr("gone", "sbA", "old", running, t0)},
	}
	rt.during = func() {
		e.clock.Step(time.Millisecond)
		e.cache.UpdateContainer(e.clock.Now(), sbA, ctr("a2", "sbA", "side", running, t0))
		e.cache.RemoveContainer(e.clock.Now(), ctr("gone", "sbA", "old", exited, t0))
	}
	r, err := lifecycle.NewReconciler(e.cache, rt, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	d, err := r.Once(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(d) != 0 {
		t.Errorf("drift = %v, want none: the listing is older than the events", d)
	}
	want := map[string]node.ContainerState{"a1": running, "a2": running}
	if got := states(e.cache.Pods()[0]); !reflect.DeepEqual(got, want) {
		t.Errorf("containers = %v, want %v", got, want)
	}
}

func TestReconcileFillsCreationTime(t *testing.T) {
	e := newEnv(t)
	e.cache.RunPod(t0, sandbox("sbA", "uidA"))
	withTime := sandbox("sbA", "uidA")
	withTime.CreatedAt = t0.Add(-time.Hour)
	r, _ := lifecycle.NewReconciler(e.cache, &fakeRuntime{sbs: []lifecycle.ListedSandbox{listed(withTime, true)}}, time.Minute)
	if d, err := r.Once(context.Background()); err != nil || len(d) != 0 {
		t.Fatalf("Once = %v, %v; want no drift", d, err)
	}
	if got := e.cache.Pods()[0].CreatedAt; !got.Equal(withTime.CreatedAt) {
		t.Errorf("CreatedAt = %v, want %v", got, withTime.CreatedAt)
	}
}

func TestReconcileListErrorIsCounted(t *testing.T) {
	e := newEnv(t)
	r, _ := lifecycle.NewReconciler(e.cache, &fakeRuntime{listErr: errors.New("connection refused")}, time.Minute)
	if _, err := r.Once(context.Background()); err == nil {
		t.Fatal("Once hid the list error")
	}
	if v := testutil.Metric(t, e.reg, "probelet_lifecycle_reconcile_total", map[string]string{"result": "error"}); v != 1 {
		t.Errorf("reconcile errors = %v, want 1", v)
	}
}

func TestReconcilerRunsEveryInterval(t *testing.T) {
	e := newEnv(t)
	rt := &fakeRuntime{}
	r, err := lifecycle.NewReconciler(e.cache, rt, 5*time.Minute, lifecycle.WithReconcileClock(e.clock))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	for want := 1; want <= 2; want++ {
		testutil.WaitFor(t, "the reconciler", func() bool { return e.clock.HasWaiters() })
		e.clock.Step(5 * time.Minute)
		testutil.WaitFor(t, "the reconciler", func() bool { return rt.listCount() == want })
	}
	cancel()
	<-done

	before := rt.listCount()
	off, _ := lifecycle.NewReconciler(e.cache, rt, 0, lifecycle.WithReconcileClock(e.clock))
	ctx, cancel = context.WithCancel(context.Background())
	done = make(chan struct{})
	go func() { off.Run(ctx); close(done) }()
	e.clock.Step(time.Hour)
	cancel()
	<-done
	if n := rt.listCount(); n != before {
		t.Errorf("disabled reconciler listed %d times", n-before)
	}
	if _, err := lifecycle.NewReconciler(e.cache, rt, -time.Second); err == nil {
		t.Error("negative interval accepted")
	}
}
