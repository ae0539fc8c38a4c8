package lifecycle_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/probelet/probelet/internal/testutil"
	"github.com/probelet/probelet/lifecycle"
	"github.com/probelet/probelet/node"
)

// runReconciler runs r until the test ends.
func runReconciler(t *testing.T, r *lifecycle.Reconciler) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { r.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

func createdAt(c *lifecycle.Cache) map[string]time.Time {
	out := map[string]time.Time{}
	for _, p := range c.Pods() {
		out[p.SandboxID] = p.CreatedAt
	}
	return out
}

// Pods learned from Synchronize carry no creation time; the reconciler
// reads it from CRI right after, whether or not the periodic reconcile is
// on, retrying while CRI is not serving, and never counts it as drift.
func TestReconcilerDatesSynchronizedPods(t *testing.T) {
	created := t0.Add(-time.Hour)
	tests := []struct {
		name      string
		interval  time.Duration
		failLists int
	}{
		{name: "reconcile off", interval: 0},
		{name: "reconcile on", interval: 5 * time.Minute},
		{name: "CRI down twice first", interval: 0, failLists: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			dated := sandbox("sbA", "uidA")
			dated.CreatedAt = created
			rt := &fakeRuntime{sbs: []lifecycle.ListedSandbox{listed(dated, true)}, failLists: tt.failLists}
			r, err := lifecycle.NewReconciler(e.cache, rt, tt.interval, lifecycle.WithReconcileClock(e.clock))
			if err != nil {
				t.Fatal(err)
			}
			e.cache.Sync(t0, []lifecycle.Sandbox{sandbox("sbA", "uidA")}, []lifecycle.Container{ctr("a1", "sbA", "web", running, t0)})
			if got := createdAt(e.cache)["sbA"]; !got.IsZero() {
				t.Fatalf("CreatedAt = %v before the reconciler ran", got)
			}
			runReconciler(t, r)
			for i := 0; i < tt.failLists; i++ {
				testutil.WaitFor(t, "the reconciler", func() bool { return rt.listCount() == i+1 && e.clock.HasWaiters() })
				e.clock.Step(30 * time.Second) // beyond any backoff step
			}
			testutil.WaitFor(t, "the reconciler", func() bool { return createdAt(e.cache)["sbA"].Equal(created) })
			if last := e.sink.last(t); last.op != "update" || !last.pod.CreatedAt.Equal(created) {
				t.Errorf("engine's last call = %s with CreatedAt %v, want the dated pod", last.op, last.pod.CreatedAt)
			}
			if n := rt.listCount(); n != tt.failLists+1 {
				t.Errorf("listings = %d, want %d", n, tt.failLists+1)
			}
			for _, kind := range []string{lifecycle.DriftPodMissing, lifecycle.DriftPodState} {
				if v := testutil.Metric(t, e.reg, "probelet_lifecycle_reconcile_drift_total", map[string]string{"kind": kind}); v != 0 {
					t.Errorf("drift %s = %v, want 0", kind, v)
				}
			}
		})
	}
}

// container returns the cached container id.
func container(c *lifecycle.Cache, id string) (node.Container, bool) {
	for _, p := range c.Pods() {
		for _, ct := range p.Containers {
			if ct.ID == id {
				return ct, true
			}
		}
	}
	return node.Container{}, false
}

// CRI-O's NRI carries no container times, pid, exit code or image: the
// reconciler reads them from CRI's status as the container's state
// changes, asks again while CRI's state lags NRI's (CRI-O reports CREATED
// for a moment after PostStartContainer), hands the pod to the engine
// again, and never counts it as drift or changes the state.
func TestReconcilerFillsContainerFacts(t *testing.T) {
	created, started, finished := t0.Add(-2*time.Second), t0.Add(-time.Second), t0.Add(5*time.Second)
	bare := func(state node.ContainerState) lifecycle.Container {
		return lifecycle.Container{SandboxID: "sbA", Container: node.Container{ID: "a1", Name: "web", State: state}}
	}
	status := func(state node.ContainerState) lifecycle.Container {
		c := bare(state)
		c.CreatedAt, c.Image = created, "localhost/app:v1"
		switch state {
		case node.StateRunning:
			c.StartedAt, c.Pid = started, 4242
		case node.StateExited:
			c.StartedAt, c.FinishedAt, c.ExitCode = started, finished, 7
		}
		return c
	}
	tests := []struct {
		name  string
		nri   node.ContainerState
		cri   []node.ContainerState // CRI's answers, one per attempt
		want  node.Container
		calls int
	}{
		{name: "created", nri: node.StateCreated, cri: []node.ContainerState{node.StateCreated}, calls: 1,
			want: node.Container{State: node.StateCreated, CreatedAt: created, Image: "localhost/app:v1"}},
		{name: "running", nri: node.StateRunning, cri: []node.ContainerState{node.StateRunning}, calls: 1,
			want: node.Container{State: node.StateRunning, CreatedAt: created, StartedAt: started, Pid: 4242, Image: "localhost/app:v1"}},
		{name: "CRI behind NRI", nri: node.StateRunning, cri: []node.ContainerState{node.StateCreated, node.StateCreated, node.StateRunning}, calls: 3,
			want: node.Container{State: node.StateRunning, CreatedAt: created, StartedAt: started, Pid: 4242, Image: "localhost/app:v1"}},
		{name: "exited", nri: node.StateExited, cri: []node.ContainerState{node.StateExited}, calls: 1,
			want: node.Container{State: node.StateExited, CreatedAt: created, StartedAt: started, FinishedAt: finished, ExitCode: 7, Image: "localhost/app:v1"}},
		{name: "CRI ahead keeps NRI's state", nri: node.StateCreated, cri: []node.ContainerState{node.StateExited}, calls: 1,
			want: node.Container{State: node.StateCreated, CreatedAt: created, Image: "localhost/app:v1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			rt := &fakeRuntime{sbs: []lifecycle.ListedSandbox{listed(sandbox("sbA", "uidA"), true)}}
			rt.setStatus(status(tt.cri[0]))
			r, err := lifecycle.NewReconciler(e.cache, rt, 0, lifecycle.WithReconcileClock(e.clock))
			if err != nil {
				t.Fatal(err)
			}
			sb := sandbox("sbA", "uidA")
			sb.CreatedAt = t0
			e.cache.RunPod(t0, sb)
			e.cache.UpdateContainer(t0, sb, bare(tt.nri))
			runReconciler(t, r)
			for i := 1; i < len(tt.cri); i++ {
				testutil.WaitFor(t, "a status call", func() bool { return rt.statusCount() == i && e.clock.HasWaiters() })
				rt.setStatus(status(tt.cri[i]))
				e.clock.Step(time.Second) // the retry's wait
			}
			testutil.WaitFor(t, "the facts", func() bool {
				c, _ := container(e.cache, "a1")
				return !c.CreatedAt.IsZero() && (tt.want.Pid == 0 || c.Pid != 0)
			})
			got, _ := container(e.cache, "a1")
			want := tt.want
			want.ID, want.Name = "a1", "web"
			if !reflect.DeepEqual(got, want) {
				t.Errorf("container = %+v\nwant        %+v", got, want)
			}
			if last := e.sink.last(t); last.op != "update" {
				t.Errorf("engine's last call = %s, want update", last.op)
			}
			if n := rt.statusCount(); n != tt.calls {
				t.Errorf("status calls = %d, want %d", n, tt.calls)
			}
			if n := rt.listCount(); n != 0 {
				t.Errorf("sandbox listings = %d for dated sandboxes, want 0", n)
			}
			if v := testutil.Metric(t, e.reg, "probelet_lifecycle_reconcile_drift_total", map[string]string{"kind": lifecycle.DriftContainerState}); v != 0 {
				t.Errorf("drift = %v, want 0", v)
			}
		})
	}
}
