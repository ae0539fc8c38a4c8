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
