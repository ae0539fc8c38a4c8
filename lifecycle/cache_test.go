package lifecycle_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/probelet/probelet/internal/testutil"
	"github.com/probelet/probelet/lifecycle"
	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/probespec"
)

const (
	running = node.StateRunning
	created = node.StateCreated
	exited  = node.StateExited
)

func TestCacheDrivesSinkAndEvents(t *testing.T) {
	sb := sandbox("sb1", "uid1")
	tests := []struct {
		name       string
		steps      func(c *lifecycle.Cache, at time.Time)
		wantLast   string // last sink op
		wantStates map[string]node.ContainerState
		wantEvents []node.EventType
		deleting   bool
	}{{
		name: "pod runs with a started container",
		steps: func(c *lifecycle.Cache, at time.Time) {
			c.RunPod(at, sb)
			c.UpdateContainer(at, sb, ctr("c1", "sb1", "web", created, t0))
			c.UpdateContainer(at, sb, ctr("c1", "sb1", "web", created, t0)) // StartContainer: still created
			c.UpdateContainer(at, sb, ctr("c1", "sb1", "web", running, t0))
		},
		wantLast:   "update",
		wantStates: map[string]node.ContainerState{"c1": running},
		wantEvents: []node.EventType{node.ContainerCreatedEvent, node.ContainerStartedEvent},
	}, {
		name: "late running event cannot revive an exited container",
		steps: func(c *lifecycle.Cache, at time.Time) {
			c.UpdateContainer(at, sb, ctr("c1", "sb1", "web", running, t0))
			c.UpdateContainer(at, sb, ctr("c1", "sb1", "web", exited, t0))
			c.UpdateContainer(at, sb, ctr("c1", "sb1", "web", running, t0))
		},
		wantLast:   "update",
		wantStates: map[string]node.ContainerState{"c1": exited},
		wantEvents: []node.EventType{node.ContainerStartedEvent, node.ContainerStoppedEvent},
	}, {
		name: "restarted container: the engine sees the newest instance only",
		steps: func(c *lifecycle.Cache, at time.Time) {
			c.UpdateContainer(at, sb, ctr("c1", "sb1", "web", exited, t0))
			c.UpdateContainer(at, sb, ctr("c2", "sb1", "web", running, t0.Add(time.Second)))
		},
		wantLast:   "update",
		wantStates: map[string]node.ContainerState{"c2": running},
		wantEvents: []node.EventType{node.ContainerStoppedEvent, node.ContainerStartedEvent},
	}, {
		name: "stopping the sandbox marks the pod deleting",
		steps: func(c *lifecycle.Cache, at time.Time) {
			c.UpdateContainer(at, sb, ctr("c1", "sb1", "web", running, t0))
			c.StopPod(at, sb)
		},
		wantLast:   "update",
		wantStates: map[string]node.ContainerState{"c1": running},
		wantEvents: []node.EventType{node.ContainerStartedEvent},
		deleting:   true,
	}, {
		name: "removing a container cleans up per container",
		steps: func(c *lifecycle.Cache, at time.Time) {
			c.UpdateContainer(at, sb, ctr("c1", "sb1", "web", running, t0))
			c.UpdateContainer(at, sb, ctr("c1", "sb1", "web", exited, t0))
			c.RemoveContainer(at, ctr("c1", "sb1", "web", exited, t0))
		},
		wantLast:   "update",
		wantStates: map[string]node.ContainerState{},
		wantEvents: []node.EventType{node.ContainerStartedEvent, node.ContainerStoppedEvent, node.ContainerDeletedEvent},
	}, {
		name: "removing the sandbox removes the pod and its containers",
		steps: func(c *lifecycle.Cache, at time.Time) {
			c.UpdateContainer(at, sb, ctr("c1", "sb1", "web", running, t0))
			c.RemovePod(at, sb)
		},
		wantLast:   "remove",
		wantEvents: []node.EventType{node.ContainerStartedEvent, node.ContainerDeletedEvent},
	}, {
		name: "events without IDs are ignored",
		steps: func(c *lifecycle.Cache, at time.Time) {
			c.RunPod(at, lifecycle.Sandbox{})
			c.UpdateContainer(at, sb, ctr("", "sb1", "web", running, t0))
			c.RemoveContainer(at, ctr("c1", "", "web", running, t0))
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			events, cancel := e.cache.SubscribeEvents(16)
			defer cancel()
			tt.steps(e.cache, e.clock.Now())
			calls := e.sink.all()
			if tt.wantLast == "" {
				if len(calls) != 0 {
					t.Fatalf("sink calls = %+v, want none", calls)
				}
				return
			}
			last := e.sink.last(t)
			if last.op != tt.wantLast || last.uid != "uid1" {
				t.Fatalf("last sink call = %s(%s), want %s(uid1)", last.op, last.uid, tt.wantLast)
			}
			if tt.wantLast == "update" {
				if got := states(last.pod); !reflect.DeepEqual(got, tt.wantStates) {
					t.Errorf("container states = %v, want %v", got, tt.wantStates)
				}
				if last.pod.Deleting != tt.deleting {
					t.Errorf("Deleting = %v, want %v", last.pod.Deleting, tt.deleting)
				}
			}
			var got []node.EventType
			for _, ev := range drain(events) {
				got = append(got, ev.Type)
				if ev.PodUID != "uid1" || ev.SandboxID != "sb1" || ev.ContainerID == "" {
					t.Errorf("event %+v lacks its pod or container", ev)
				}
			}
			if !reflect.DeepEqual(got, tt.wantEvents) {
				t.Errorf("events = %v, want %v", got, tt.wantEvents)
			}
		})
	}
}

func TestSnapshotCarriesPodAndContainerFields(t *testing.T) {
	e := newEnv(t)
	sb := sandbox("sb1", "uid1")
	sb.Labels = map[string]string{"app": "web"}
	ct := ctr("c1", "sb1", "web", running, t0)
	ct.Pid, ct.StartedAt = 99, t0.Add(time.Second)
	ct.Annotations = map[string]string{probespec.AnnotationPodTerminationGracePeriod: "45"}
	e.cache.UpdateContainer(t0, sb, ct)

	p := e.sink.last(t).pod
	if p.Name != "web-uid1" || p.Namespace != "default" || p.SandboxID != "sb1" ||
		p.NetNSPath != "/proc/42/ns/net" || p.IPs[0] != "10.0.0.7" || p.Labels["app"] != "web" {
		t.Errorf("pod fields not carried: %+v", p)
	}
	// The runtime carries the pod's grace only on containers; the snapshot
	// keeps them so the one derivation (spec.PodGrace) can read it.
	if g, err := probespec.PodGrace(&p); err != nil || g == nil || *g != 45 {
		t.Errorf("grace period = %v (%v), want 45", g, err)
	}
	c := p.Containers[0]
	if c.Pid != 99 || !c.StartedAt.Equal(t0.Add(time.Second)) || c.Image != "busybox" {
		t.Errorf("container fields not carried: %+v", c)
	}
	// A stop event without a pid keeps what is known and clears the pid.
	stop := ctr("c1", "sb1", "web", exited, time.Time{})
	stop.ExitCode, stop.FinishedAt = 137, t0.Add(time.Minute)
	e.cache.UpdateContainer(t0, lifecycle.Sandbox{}, stop)
	c = e.sink.last(t).pod.Containers[0]
	if c.Pid != 0 || c.ExitCode != 137 || !c.CreatedAt.Equal(t0) || !c.StartedAt.Equal(t0.Add(time.Second)) {
		t.Errorf("after stop: %+v", c)
	}
}

// containerd sends a bare pod (ID, empty maps) when it lost the sandbox;
// what was known (name, annotations with the probes) must survive it.
func TestBarePodKeepsWhatWasKnown(t *testing.T) {
	e := newEnv(t)
	sb := sandbox("sb1", "uid1")
	sb.Annotations = map[string]string{probespec.AnnotationProbes: "probes"}
	e.cache.RunPod(t0, sb)
	e.cache.UpdateContainer(t0, sb, ctr("c0", "sb1", "web", running, t0))
	bare := lifecycle.Sandbox{ID: "sb1", Annotations: map[string]string{}, Labels: map[string]string{}}
	e.cache.UpdateContainer(t0, bare, ctr("c0", "sb1", "web", exited, t0))
	if p := e.sink.last(t).pod; p.Annotations[probespec.AnnotationProbes] != "probes" || p.Name != "web-uid1" {
		t.Fatalf("a bare pod erased what was known: %+v", p)
	}
	changed := sb
	changed.Annotations = map[string]string{probespec.AnnotationProbes: "new"}
	e.cache.RunPod(t0, changed)
	if p := e.sink.last(t).pod; p.Annotations[probespec.AnnotationProbes] != "new" {
		t.Fatalf("a changed annotation was not handed over: %+v", p.Annotations)
	}
}

func TestRecreatedSandboxKeepsPodAlive(t *testing.T) {
	e := newEnv(t)
	old, cur := sandbox("sb-old", "uid1"), sandbox("sb-new", "uid1")
	e.cache.UpdateContainer(t0, old, ctr("c1", "sb-old", "web", running, t0))
	e.cache.RunPod(t0, cur)
	e.cache.UpdateContainer(t0, cur, ctr("c2", "sb-new", "web", running, t0.Add(time.Second)))
	e.cache.RemovePod(t0, old)
	last := e.sink.last(t)
	if last.op != "update" || last.pod.SandboxID != "sb-new" || states(last.pod)["c2"] != running {
		t.Fatalf("after removing the old sandbox the engine got %s %+v, want the new sandbox", last.op, last.pod)
	}
	if n := len(e.cache.Pods()); n != 1 {
		t.Fatalf("Pods() = %d sandboxes, want 1", n)
	}
}

func TestSyncKeepsSurvivorsAndDropsVanished(t *testing.T) {
	e := newEnv(t)
	a, b := sandbox("sbA", "uidA"), sandbox("sbB", "uidB")
	e.cache.UpdateContainer(t0, a, ctr("a1", "sbA", "web", running, t0))
	e.cache.UpdateContainer(t0, a, ctr("a0", "sbA", "old", exited, t0))
	e.cache.UpdateContainer(t0, a, ctr("a2", "sbA", "side", running, t0))
	e.cache.UpdateContainer(t0, b, ctr("b1", "sbB", "web", running, t0))
	events, cancel := e.cache.SubscribeEvents(16)
	defer cancel()

	c := sandbox("sbC", "uidC")
	e.cache.Sync(t0, []lifecycle.Sandbox{a, c}, []lifecycle.Container{
		ctr("a1", "sbA", "web", running, t0), ctr("c1", "sbC", "web", running, t0)})

	last := e.sink.last(t)
	if last.op != "sync" || len(last.pods) != 2 || last.pods[0].UID != "uidA" || last.pods[1].UID != "uidC" {
		t.Fatalf("sync handed %s %+v, want pods uidA and uidC", last.op, last.pods)
	}
	want := map[string]node.ContainerState{"a1": running, "a0": exited}
	if got := states(last.pods[0]); !reflect.DeepEqual(got, want) {
		t.Errorf("uidA containers = %v, want %v (exited kept, unlisted live dropped)", got, want)
	}
	got := map[string]node.EventType{}
	for _, ev := range drain(events) {
		got[ev.ContainerID] = ev.Type
	}
	wantEv := map[string]node.EventType{"a2": node.ContainerDeletedEvent, "b1": node.ContainerDeletedEvent, "c1": node.ContainerStartedEvent}
	if !reflect.DeepEqual(got, wantEv) {
		t.Errorf("events = %v, want %v", got, wantEv)
	}
}

func TestSlowSubscriberNeverBlocks(t *testing.T) {
	e := newEnv(t)
	slow, cancel := e.cache.SubscribeEvents(1)
	fast, cancelFast := e.cache.SubscribeEvents(10)
	defer cancelFast()
	sb := sandbox("sb1", "uid1")
	for i := range 3 {
		e.cache.UpdateContainer(t0, sb, ctr(fmt.Sprint("c", i), "sb1", "web", running, t0))
	}
	if n := len(drain(fast)); n != 3 {
		t.Errorf("fast subscriber got %d events, want 3", n)
	}
	if n := len(drain(slow)); n != 1 {
		t.Errorf("slow subscriber got %d events, want 1", n)
	}
	if v := testutil.Metric(t, e.reg, "probelet_lifecycle_events_dropped_total", nil); v != 2 {
		t.Errorf("dropped = %v, want 2", v)
	}
	cancel()
	cancel() // idempotent
	if _, ok := <-slow; ok {
		t.Error("cancel did not close the channel")
	}
}

func TestHandoffLatencyIsRecorded(t *testing.T) {
	e := newEnv(t)
	received := e.clock.Now()
	e.clock.Step(3 * time.Millisecond)
	e.cache.RunPod(received, sandbox("sb1", "uid1"))
	mfs, err := e.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "probelet_lifecycle_event_to_worker_seconds" {
			h := mf.GetMetric()[0].GetHistogram()
			if h.GetSampleCount() != 1 || h.GetSampleSum() != 0.003 {
				t.Fatalf("histogram count=%d sum=%v, want 1 and 0.003", h.GetSampleCount(), h.GetSampleSum())
			}
			return
		}
	}
	t.Fatal("latency histogram not registered")
}

func TestViewPodsAndConnection(t *testing.T) {
	e := newEnv(t)
	e.cache.RunPod(t0, lifecycle.Sandbox{ID: "s2", UID: "u2", Name: "b", Namespace: "ns"})
	e.cache.RunPod(t0, lifecycle.Sandbox{ID: "s1", UID: "u1", Name: "a", Namespace: "ns"})
	e.cache.RunPod(t0, lifecycle.Sandbox{ID: "s3", Name: "no-uid", Namespace: "a"})
	pods := e.cache.Pods()
	var names []string
	for _, p := range pods {
		names = append(names, p.Namespace+"/"+p.Name+"/"+p.UID)
	}
	want := []string{"a/no-uid/s3", "ns/a/u1", "ns/b/u2"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("Pods() = %v, want %v (a pod without UID is keyed by its sandbox ID)", names, want)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	tests := []struct {
		name string
		sink lifecycle.Sink
		opts []lifecycle.Option
	}{
		{"nil sink", nil, nil},
		{"nil clock", &fakeSink{}, []lifecycle.Option{lifecycle.WithClock(nil)}},
		{"nil logger", &fakeSink{}, []lifecycle.Option{lifecycle.WithLogger(nil)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := lifecycle.New(tt.sink, tt.opts...); err == nil {
				t.Fatal("New accepted it")
			}
		})
	}
}

// Whether a sandbox runs in the node's network is fixed at its creation:
// a later report that no longer lists the network namespace (containerd
// drops one already torn down) does not turn a pod-network sandbox into a
// host-network one, nor one that says nothing change it.
func TestSandboxNetworkIsFixedAtFirstSight(t *testing.T) {
	for _, tc := range []struct {
		name  string
		first lifecycle.Network
		later lifecycle.Network
		want  bool
	}{
		{"pod network stays", lifecycle.NetworkPod, lifecycle.NetworkHost, false},
		{"host network stays", lifecycle.NetworkHost, lifecycle.NetworkUnknown, true},
		{"learned when first unknown", lifecycle.NetworkUnknown, lifecycle.NetworkHost, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			sb := sandbox("sb1", "uid1")
			sb.Network = tc.first
			e.cache.UpdateContainer(t0, sb, ctr("c1", "sb1", "web", running, t0))
			sb.Network = tc.later
			e.cache.UpdateContainer(t0, sb, ctr("c1", "sb1", "web", exited, t0))
			if got := e.sink.last(t).pod.HostNetwork; got != tc.want {
				t.Errorf("HostNetwork = %v, want %v", got, tc.want)
			}
		})
	}
}
