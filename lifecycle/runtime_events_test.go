package lifecycle_test

import (
	"testing"

	"github.com/probelet/probelet/lifecycle"
	"github.com/probelet/probelet/node"
)

// TestRuntimeEventsIncludeSandboxesInOrder: SubscribeRuntimeEvents sees
// the sandbox's life around its containers', numbered without gaps, while
// SubscribeEvents keeps seeing container events only.
func TestRuntimeEventsIncludeSandboxesInOrder(t *testing.T) {
	c, err := lifecycle.New(&fakeSink{})
	if err != nil {
		t.Fatal(err)
	}
	all, cancelAll := c.SubscribeRuntimeEvents(32)
	defer cancelAll()
	ctrOnly, cancelCtr := c.SubscribeEvents(32)
	defer cancelCtr()

	sb := sandbox("sb1", "uid1")
	c.RunPod(t0, sb)
	c.UpdateContainer(t0, sb, ctr("c1", "sb1", "web", running, t0))
	c.UpdateContainer(t0, sb, ctr("c1", "sb1", "web", exited, t0))
	c.StopPod(t0, sb)
	c.RemovePod(t0, sb)

	type seen struct {
		typ node.EventType
		id  string
	}
	want := []seen{
		{node.PodSandboxReadyEvent, ""},
		{node.ContainerStartedEvent, "c1"},
		{node.ContainerStoppedEvent, "c1"},
		{node.PodSandboxStoppedEvent, ""},
		{node.ContainerDeletedEvent, "c1"},
		{node.PodSandboxRemovedEvent, ""},
	}
	var first uint64
	for i, w := range want {
		ev := <-all
		if ev.Type != w.typ || ev.ContainerID != w.id || ev.SandboxID != "sb1" {
			t.Errorf("runtime event %d = %v %q in %q, want %v %q", i, ev.Type, ev.ContainerID, ev.SandboxID, w.typ, w.id)
		}
		if i == 0 {
			first = ev.Seq
		} else if ev.Seq != first+uint64(i) {
			t.Errorf("runtime event %d has Seq %d, want %d", i, ev.Seq, first+uint64(i))
		}
		if w.typ.Sandbox() != (w.id == "") {
			t.Errorf("%v.Sandbox() = %v", w.typ, w.typ.Sandbox())
		}
	}
	for _, w := range []node.EventType{node.ContainerStartedEvent, node.ContainerStoppedEvent, node.ContainerDeletedEvent} {
		if ev := <-ctrOnly; ev.Type != w || ev.Seq != 0 {
			t.Errorf("container event %v (Seq %d), want %v without Seq", ev.Type, ev.Seq, w)
		}
	}
	select {
	case ev := <-ctrOnly:
		t.Errorf("container subscriber got %v", ev.Type)
	default:
	}
}
