package lifecycle_test

import (
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/probelet/probelet/lifecycle"
	"github.com/probelet/probelet/node"
)

// sinkCall is one call the cache made on the engine.
type sinkCall struct {
	op   string // update, remove, sync
	pod  node.Pod
	uid  string
	pods []node.Pod
}

// fakeSink records what the cache hands to the engine.
type fakeSink struct {
	mu    sync.Mutex
	calls []sinkCall
}

var _ lifecycle.Sink = (*fakeSink)(nil)

func (f *fakeSink) UpdatePod(p node.Pod) { f.add(sinkCall{op: "update", pod: p, uid: p.UID}) }
func (f *fakeSink) RemovePod(uid string) { f.add(sinkCall{op: "remove", uid: uid}) }
func (f *fakeSink) SyncPods(ps []node.Pod) {
	f.add(sinkCall{op: "sync", pods: ps})
}

func (f *fakeSink) add(c sinkCall) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
}

func (f *fakeSink) all() []sinkCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]sinkCall(nil), f.calls...)
}

func (f *fakeSink) last(t *testing.T) sinkCall {
	t.Helper()
	c := f.all()
	if len(c) == 0 {
		t.Fatal("no call reached the pod sink")
	}
	return c[len(c)-1]
}

var t0 = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)

type env struct {
	cache *lifecycle.Cache
	sink  *fakeSink
	clock *clocktesting.FakeClock
	reg   *prometheus.Registry
}

func newEnv(t *testing.T, opts ...lifecycle.Option) *env {
	t.Helper()
	e := &env{sink: &fakeSink{}, clock: clocktesting.NewFakeClock(t0), reg: prometheus.NewRegistry()}
	base := []lifecycle.Option{lifecycle.WithClock(e.clock), lifecycle.WithRegisterer(e.reg)}
	c, err := lifecycle.New(e.sink, append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	e.cache = c
	return e
}

func sandbox(id, uid string) lifecycle.Sandbox {
	return lifecycle.Sandbox{ID: id, UID: uid, Name: "web-" + uid, Namespace: "default",
		IPs: []string{"10.0.0.7"}, NetNSPath: "/proc/42/ns/net", Pid: 42}
}

func ctr(id, sandboxID, name string, state node.ContainerState, created time.Time) lifecycle.Container {
	return lifecycle.Container{SandboxID: sandboxID, Container: node.Container{
		ID: id, Name: name, State: state, CreatedAt: created, Image: "busybox"}}
}

func states(p node.Pod) map[string]node.ContainerState {
	out := map[string]node.ContainerState{}
	for _, c := range p.Containers {
		out[c.ID] = c.State
	}
	return out
}

func drain(ch <-chan node.Event) []node.Event {
	var out []node.Event
	for {
		select {
		case ev := <-ch:
			out = append(out, ev)
		default:
			return out
		}
	}
}
