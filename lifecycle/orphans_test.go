package lifecycle_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/probelet/probelet/internal/testutil"
	"github.com/probelet/probelet/lifecycle"
	"github.com/probelet/probelet/node"
)

// After a runtime restart containerd announces no stop or removal of the
// sandboxes it listed in Synchronize, nor the removal of containers that
// had exited before (containerd #8426): such a sandbox goes with its last
// container the runtime still tracks.
func TestOrphanSandboxGoesWithItsLastContainer(t *testing.T) {
	sbA := sandbox("sbA", "uidA")
	tests := []struct {
		name       string
		steps      func(c *lifecycle.Cache)
		wantPods   []string // sandbox IDs left
		wantEvents map[string]node.EventType
	}{{
		name: "listed by Synchronize: dropped with its containers",
		steps: func(c *lifecycle.Cache) {
			c.Sync(t0, []lifecycle.Sandbox{sbA}, []lifecycle.Container{ctr("a1", "sbA", "web", running, t0)})
			c.UpdateContainer(t0, sbA, ctr("a1", "sbA", "web", exited, t0))
			c.RemoveContainer(t0, ctr("a1", "sbA", "web", exited, t0))
		},
		wantEvents: map[string]node.EventType{"a0": node.ContainerDeletedEvent, "a1": node.ContainerDeletedEvent},
	}, {
		name: "listed, then stopped through NRI: kept until its removal",
		steps: func(c *lifecycle.Cache) {
			c.Sync(t0, []lifecycle.Sandbox{sbA}, []lifecycle.Container{ctr("a1", "sbA", "web", running, t0)})
			c.StopPod(t0, sbA)
			c.RemoveContainer(t0, ctr("a1", "sbA", "web", exited, t0))
		},
		wantPods:   []string{"sbA"},
		wantEvents: map[string]node.EventType{"a1": node.ContainerDeletedEvent},
	}, {
		name: "announced by RunPodSandbox: kept until its removal",
		steps: func(c *lifecycle.Cache) {
			c.RemoveContainer(t0, ctr("a0", "sbA", "old", exited, t0))
			c.RunPod(t0, sandbox("sbB", "uidB"))
			c.UpdateContainer(t0, sandbox("sbB", "uidB"), ctr("b1", "sbB", "web", running, t0))
			c.RemoveContainer(t0, ctr("b1", "sbB", "web", exited, t0))
		},
		wantPods:   []string{"sbA", "sbB"},
		wantEvents: map[string]node.EventType{"a0": node.ContainerDeletedEvent, "b1": node.ContainerDeletedEvent},
	}, {
		name: "a forgotten sandbox that lives on comes back with its next container",
		steps: func(c *lifecycle.Cache) {
			c.Sync(t0, []lifecycle.Sandbox{sbA}, []lifecycle.Container{ctr("a1", "sbA", "web", running, t0)})
			c.RemoveContainer(t0, ctr("a1", "sbA", "web", exited, t0))
			c.UpdateContainer(t0, sbA, ctr("a2", "sbA", "web", running, t0))
		},
		wantPods:   []string{"sbA"},
		wantEvents: map[string]node.EventType{"a0": node.ContainerDeletedEvent, "a1": node.ContainerDeletedEvent, "a2": node.ContainerStartedEvent},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			// a0 exited before the runtime restart: no RemoveContainer comes for it.
			e.cache.RunPod(t0, sbA)
			e.cache.UpdateContainer(t0, sbA, ctr("a0", "sbA", "old", exited, t0))
			events, cancel := e.cache.SubscribeEvents(16)
			defer cancel()
			tt.steps(e.cache)
			var pods []string
			for _, p := range e.cache.Pods() {
				pods = append(pods, p.SandboxID)
			}
			if !reflect.DeepEqual(pods, tt.wantPods) {
				t.Errorf("sandboxes = %v, want %v", pods, tt.wantPods)
			}
			got := map[string]node.EventType{}
			for _, ev := range drain(events) {
				if ev.Type != node.ContainerStoppedEvent {
					got[ev.ContainerID] = ev.Type
				}
			}
			if !reflect.DeepEqual(got, tt.wantEvents) {
				t.Errorf("events = %v, want %v", got, tt.wantEvents)
			}
			if len(tt.wantPods) == 0 {
				if last := e.sink.last(t); last.op != "remove" || last.uid != "uidA" {
					t.Errorf("engine's last call = %s(%s), want remove(uidA)", last.op, last.uid)
				}
			}
		})
	}
}

// An exited container kept through a Synchronize whose removal will not be
// announced is forgotten once a new instance replaces it.
func TestOrphanExitedInstanceGoesWhenReplaced(t *testing.T) {
	e := newEnv(t)
	sbA := sandbox("sbA", "uidA")
	e.cache.RunPod(t0, sbA)
	e.cache.UpdateContainer(t0, sbA, ctr("a0", "sbA", "web", exited, t0))
	e.cache.UpdateContainer(t0, sbA, ctr("s0", "sbA", "side", exited, t0))
	e.cache.Sync(t0, []lifecycle.Sandbox{sbA}, nil)
	e.cache.UpdateContainer(t0, sbA, ctr("a1", "sbA", "web", running, t0.Add(time.Second)))
	if n := testutil.Metric(t, e.reg, "probelet_lifecycle_containers", nil); n != 2 {
		t.Errorf("containers in the cache = %v, want 2 (a1 and the unreplaced s0)", n)
	}
	want := map[string]node.ContainerState{"a1": running, "s0": exited}
	if got := states(e.cache.Pods()[0]); !reflect.DeepEqual(got, want) {
		t.Errorf("pod containers = %v, want %v", got, want)
	}
}
