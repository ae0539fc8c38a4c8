package lifecycle

import (
	"testing"
	"time"

	"github.com/probelet/probelet/node"
)

type nopSink struct{}

func (nopSink) UpdatePod(node.Pod)  {}
func (nopSink) RemovePod(string)    {}
func (nopSink) SyncPods([]node.Pod) {}

// A sandbox with its time (RunPodSandbox stamps it) asks for nothing; one
// without asks the reconciler once, however many events follow.
func TestAskDateOncePerSandbox(t *testing.T) {
	at := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	undated := Sandbox{ID: "sbB", UID: "uidB"}
	ctrB := Container{SandboxID: "sbB", Container: node.Container{ID: "b1", Name: "web", State: node.StateRunning}}
	steps := []struct {
		name string
		do   func(c *Cache)
		want int
	}{
		{"stamped pod", func(c *Cache) { c.RunPod(at, Sandbox{ID: "sbA", UID: "uidA", CreatedAt: at}) }, 0},
		{"synchronized pod", func(c *Cache) { c.Sync(at, []Sandbox{{ID: "sbA", UID: "uidA"}, undated}, []Container{ctrB}) }, 1},
		{"its next events", func(c *Cache) {
			c.UpdateContainer(at, undated, ctrB)
			c.Sync(at, []Sandbox{undated}, []Container{ctrB})
		}, 0},
		{"container before its pod", func(c *Cache) {
			c.UpdateContainer(at, Sandbox{}, Container{SandboxID: "sbC", Container: node.Container{ID: "c1", Name: "web"}})
		}, 1},
	}
	c, err := New(nopSink{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		s.do(c)
		got := len(c.undated)
		if got != s.want {
			t.Errorf("%s: %d date requests, want %d", s.name, got, s.want)
		}
		if got > 0 {
			<-c.undated
		}
	}
}

// A container is asked about once per state, and only when NRI left out a
// fact of that state: containerd's events carry them all, CRI-O's none.
func TestAskFactsOncePerState(t *testing.T) {
	at := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	sb := Sandbox{ID: "sbA", UID: "uidA", CreatedAt: at}
	full := func(state node.ContainerState) Container {
		c := Container{SandboxID: "sbA", Container: node.Container{ID: "a1", Name: "web", State: state, CreatedAt: at}}
		if state != node.StateCreated {
			c.StartedAt, c.Pid = at, 42
		}
		if state == node.StateExited {
			c.FinishedAt, c.ExitCode, c.Pid = at, 1, 0
		}
		return c
	}
	bare := func(id string, state node.ContainerState) Container {
		return Container{SandboxID: "sbA", Container: node.Container{ID: id, Name: "web", State: state}}
	}
	steps := []struct {
		name string
		ctr  Container
		want bool
	}{
		{"containerd: created", full(node.StateCreated), false},
		{"containerd: running", full(node.StateRunning), false},
		{"containerd: exited", full(node.StateExited), false},
		{"CRI-O: created", bare("b1", node.StateCreated), true},
		{"CRI-O: created again", bare("b1", node.StateCreated), false},
		{"CRI-O: running", bare("b1", node.StateRunning), true},
		{"CRI-O: running again", bare("b1", node.StateRunning), false},
		{"CRI-O: exited", bare("b1", node.StateExited), true},
	}
	c, err := New(nopSink{})
	if err != nil {
		t.Fatal(err)
	}
	c.RunPod(at, sb)
	for _, s := range steps {
		c.UpdateContainer(at, sb, s.ctr)
		asked := len(c.undated) > 0
		if asked != s.want {
			t.Errorf("%s: asked %v, want %v", s.name, asked, s.want)
		}
		if asked {
			<-c.undated
			if ids := c.takeUnfilled(); len(ids) != 1 || ids[0] != s.ctr.ID {
				t.Errorf("%s: unfilled %v, want [%s]", s.name, ids, s.ctr.ID)
			}
		}
	}
}
