package lifecycle_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/probelet/probelet/lifecycle"
	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/probespec"
)

// nopSink is an engine that takes snapshots and does nothing.
type nopSink struct{}

func (nopSink) UpdatePod(node.Pod)  {}
func (nopSink) RemovePod(string)    {}
func (nopSink) SyncPods([]node.Pod) {}

// BenchmarkContainerEventHandoff measures what an NRI container event
// costs in the cache up to the engine handoff, with pods-1 other pods
// cached and a subscriber listening.
func BenchmarkContainerEventHandoff(b *testing.B) {
	for _, pods := range []int{1, 1000} {
		b.Run(fmt.Sprintf("pods=%d", pods), func(b *testing.B) {
			c, err := lifecycle.New(nopSink{})
			if err != nil {
				b.Fatal(err)
			}
			ann := map[string]string{probespec.AnnotationProbes: `{"web": {"readinessProbe": {"tcpSocket": {"port": 8080}}}}`}
			for i := range pods {
				sb := lifecycle.Sandbox{ID: fmt.Sprint("sb", i), UID: fmt.Sprint("uid", i), Name: "web", Namespace: "ns", Annotations: ann}
				c.UpdateContainer(time.Now(), sb, ctr(fmt.Sprint("c", i), sb.ID, "web", node.StateRunning, t0))
			}
			events, cancel := c.SubscribeEvents(1)
			defer cancel()
			go func() {
				for range events {
				}
			}()
			sb := lifecycle.Sandbox{ID: "sb0", UID: "uid0", Name: "web", Namespace: "ns", Annotations: ann}
			states := []node.ContainerState{node.StateCreated, node.StateRunning, node.StateExited}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				id := fmt.Sprint("x", i/3)
				c.UpdateContainer(time.Now(), sb, ctr(id, "sb0", "web", states[i%3], t0))
				if i%3 == 2 {
					c.RemoveContainer(time.Now(), ctr(id, "sb0", "web", node.StateExited, t0))
				}
			}
		})
	}
}
