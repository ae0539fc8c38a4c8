package prober_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/results"
	"github.com/probelet/probelet/probespec"
)

// Ports route a fake TCP probe to the answers of one probe type.
const (
	livePort  = 1001
	readyPort = 1002
	startPort = 1003
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

var errBroken = errors.New("prober broke")

// answer is one scripted handler result.
type answer struct {
	res probe.Result
	out string
	err error
}

var (
	success = answer{res: probe.Success}
	failure = answer{res: probe.Failure, out: "connection refused"}
	warning = answer{res: probe.Warning, out: "Probe terminated redirects"}
	broken  = answer{res: probe.Unknown, err: errBroken}
)

// fakeTCP answers TCP probes from per-port scripts, then per-port defaults
// (Success when unset), and counts calls. A gate makes a port's probes
// block until the gate closes or the probe is cancelled.
type fakeTCP struct {
	mu      sync.Mutex
	script  map[int][]answer
	def     map[int]answer
	calls   map[int]int
	targets []probe.TCPTarget
	gate    map[int]chan struct{}
	entered chan int
	// seen receives the port of every call (dropped when full).
	seen chan int
}

func newFakeTCP() *fakeTCP {
	return &fakeTCP{
		script: map[int][]answer{}, def: map[int]answer{}, calls: map[int]int{},
		gate: map[int]chan struct{}{}, entered: make(chan int, 100), seen: make(chan int, 1000),
	}
}

func (f *fakeTCP) ProbeTCP(ctx context.Context, t probe.TCPTarget) (probe.Result, string, probe.Method, error) {
	f.mu.Lock()
	f.calls[t.Port]++
	f.targets = append(f.targets, t)
	a, ok := f.def[t.Port]
	if !ok {
		a = answer{res: probe.Success}
	}
	if s := f.script[t.Port]; len(s) > 0 {
		a, f.script[t.Port] = s[0], s[1:]
	}
	gate := f.gate[t.Port]
	f.mu.Unlock()
	select {
	case f.seen <- t.Port:
	default:
	}
	if gate != nil {
		f.entered <- t.Port
		select {
		case <-gate:
		case <-ctx.Done():
			return probe.Unknown, "", probe.MethodDial, ctx.Err()
		}
	}
	return a.res, a.out, probe.MethodDial, a.err
}

// then queues answers for port.
func (f *fakeTCP) then(port int, as ...answer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.script[port] = append(f.script[port], as...)
}

// always sets port's answer once the script is used up.
func (f *fakeTCP) always(port int, a answer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.def[port] = a
}

// block makes port's probes wait; the returned func releases them.
func (f *fakeTCP) block(port int) func() {
	f.mu.Lock()
	defer f.mu.Unlock()
	g := make(chan struct{})
	f.gate[port] = g
	return func() {
		f.mu.Lock()
		delete(f.gate, port)
		f.mu.Unlock()
		close(g)
	}
}

// seenTargets returns every target probed, in order.
func (f *fakeTCP) seenTargets() []probe.TCPTarget {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.targets)
}

func (f *fakeTCP) count(port int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[port]
}

// kill is one KillContainer call.
type kill struct {
	id     string
	grace  time.Duration
	reason string
}

// fakeKiller records kills like the runtime killer: a container in exited
// is not stopped (KillNotRunning), others are (KillIssued first); a gate
// makes the stop block. With hold set it first defers the kill, like the
// kill guard, until hold is closed or the kill is cancelled, and records
// the failures the engine tells it of meanwhile (a FailureObserver).
type fakeKiller struct {
	mu     sync.Mutex
	kills  []kill
	err    error
	gate   chan struct{}
	exited map[string]bool
	hold   chan struct{}
	// cancelled counts kills cancelled while held.
	cancelled int
	// held is the kill being held; failedAgain the failures told of it.
	held        prober.Kill
	failedAgain []time.Time
	// preStops are the kills' hooks; hook is reported as KillHookRan
	// after KillIssued when set.
	preStops []*prober.Hook
	hook     *prober.HookResult
}

var _ prober.FailureObserver = (*fakeKiller)(nil)

func (k *fakeKiller) ProbeFailed(containerID string, at time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if containerID == k.held.ContainerID {
		k.failedAgain = append(k.failedAgain, at)
	}
}

func (k *fakeKiller) KillContainer(ctx context.Context, req prober.Kill, report chan<- prober.KillOutcome) {
	k.mu.Lock()
	hold := k.hold
	k.mu.Unlock()
	if hold != nil {
		k.mu.Lock()
		k.held = req
		k.mu.Unlock()
		report <- prober.KillOutcome{Kind: prober.KillDeferred, Reason: "node in FullDisruption"}
		select {
		case <-hold:
		case <-ctx.Done():
			k.mu.Lock()
			k.cancelled++
			k.mu.Unlock()
			report <- prober.KillOutcome{Kind: prober.KillCancelled, Err: ctx.Err()}
			return
		}
	}
	k.mu.Lock()
	if k.exited[req.ContainerID] {
		k.mu.Unlock()
		report <- prober.KillOutcome{Kind: prober.KillNotRunning, Err: fmt.Errorf("%w: container %s exited", node.ErrNotRunning, req.ContainerID)}
		return
	}
	k.kills = append(k.kills, kill{req.ContainerID, req.GracePeriod, req.Reason})
	k.preStops = append(k.preStops, req.PreStop)
	gate, err, hook := k.gate, k.err, k.hook
	k.mu.Unlock()
	report <- prober.KillOutcome{Kind: prober.KillIssued}
	if hook != nil {
		report <- prober.KillOutcome{Kind: prober.KillHookRan, Hook: hook}
	}
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			report <- prober.KillOutcome{Kind: prober.KillFailed, Err: ctx.Err()}
			return
		}
	}
	if err != nil {
		report <- prober.KillOutcome{Kind: prober.KillFailed, Err: err}
		return
	}
	report <- prober.KillOutcome{Kind: prober.KillDone}
}

func (k *fakeKiller) calls() []kill {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]kill(nil), k.kills...)
}

// harness is a started Manager on a fake clock with fake TCP and killer.
type harness struct {
	t       *testing.T
	clock   *clocktesting.FakeClock
	m       *prober.Manager
	tcp     *fakeTCP
	killer  *fakeKiller
	reg     *prometheus.Registry
	changes <-chan prober.ResultChange
	events  <-chan prober.Event
	// stop ends the engine's Run and waits for it.
	stop func()
}

// newHarness starts a Manager whose agent started an hour ago (no jitter)
// unless opts say otherwise.
func newHarness(t *testing.T, opts ...prober.Option) *harness {
	t.Helper()
	h := &harness{
		t: t, clock: clocktesting.NewFakeClock(epoch), tcp: newFakeTCP(),
		killer: &fakeKiller{}, reg: prometheus.NewRegistry(),
	}
	base := []prober.Option{
		prober.WithClock(h.clock), prober.WithTCPProber(h.tcp), prober.WithKiller(h.killer),
		prober.WithRegisterer(h.reg), prober.WithAgentStartTime(epoch.Add(-time.Hour)),
		prober.WithJitter(func() float64 { return 0.5 }),
		prober.WithSpecParser(rawSpecs{}),
	}
	m, err := prober.NewManager(append(base, opts...)...)
	if err != nil {
		t.Fatalf("NewManager: %v", err)
	}
	h.m = m
	var cancelC, cancelE func()
	h.changes, cancelC = m.SubscribeResults(1000)
	h.events, cancelE = m.SubscribeEvents(1000)
	h.stop = run(t, m)
	t.Cleanup(func() { cancelC(); cancelE(); h.stop() })
	return h
}

// run runs m until the returned stop (idempotent) cancels it and waits for
// Run to return; Run's error fails the test.
func run(t testing.TB, m *prober.Manager) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
}

// settle waits until the engine has caught up with the clock.
func (h *harness) settle() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.m.WaitIdle(ctx); err != nil {
		h.t.Fatalf("WaitIdle: %v", err)
	}
}

// update hands pod to the engine and settles.
func (h *harness) update(pod node.Pod) {
	h.t.Helper()
	h.m.UpdatePod(pod)
	h.settle()
}

// step advances the clock by d one second at a time, settling after each.
func (h *harness) step(d time.Duration) {
	h.t.Helper()
	for d > 0 {
		s := min(d, time.Second)
		h.clock.Step(s)
		h.settle()
		d -= s
	}
}

// result is the published result of c's probe t, Unknown when none.
func (h *harness) result(id string, t probespec.Type) results.Result {
	h.t.Helper()
	st, ok := h.m.Container(id)
	if !ok {
		h.t.Fatalf("container %s unknown", id)
	}
	ps, ok := st.Probes[t]
	if !ok {
		h.t.Fatalf("container %s has no %v probe", id, t)
	}
	return ps.Result
}

// wantResult fails unless c's probe t publishes want.
func (h *harness) wantResult(id string, t probespec.Type, want results.Result) {
	h.t.Helper()
	if got := h.result(id, t); got != want {
		h.t.Fatalf("%s %v result = %v, want %v", id, t, got, want)
	}
}

// drainChanges returns the result changes published so far.
func (h *harness) drainChanges() []prober.ResultChange {
	var out []prober.ResultChange
	for {
		select {
		case c := <-h.changes:
			out = append(out, c)
		default:
			return out
		}
	}
}

// drainEvents returns the events published so far.
func (h *harness) drainEvents() []prober.Event {
	var out []prober.Event
	for {
		select {
		case e := <-h.events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// counter reads prober_probe_total for one series.
// erroredTotal reads probelet_probe_errors_total for t, -1 when absent.
func (h *harness) erroredTotal(t probespec.Type) float64 {
	h.t.Helper()
	mfs, err := h.reg.Gather()
	if err != nil {
		h.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "probelet_probe_errors_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == t.String() {
				return m.GetCounter().GetValue()
			}
		}
	}
	return -1
}

func (h *harness) counter(t probespec.Type, result, container string) float64 {
	h.t.Helper()
	mfs, err := h.reg.Gather()
	if err != nil {
		h.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "prober_probe_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if l["probe_type"] == t.String() && l["result"] == result && l["container"] == container {
				return m.GetCounter().GetValue()
			}
		}
	}
	return -1
}

// series counts the gathered series of a metric.
func (h *harness) series(name string) int {
	h.t.Helper()
	mfs, err := h.reg.Gather()
	if err != nil {
		h.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return len(mf.GetMetric())
		}
	}
	return 0
}

// tcpProbe is a defaulted TCP probe on port.
func tcpProbe(port int, mutate ...func(*corev1.Probe)) *corev1.Probe {
	p := &corev1.Probe{
		ProbeHandler:     corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(int32(port))}},
		TimeoutSeconds:   1,
		PeriodSeconds:    10,
		SuccessThreshold: 1,
		FailureThreshold: 3,
	}
	for _, f := range mutate {
		f(p)
	}
	return p
}

func withThresholds(success, failure int32) func(*corev1.Probe) {
	return func(p *corev1.Probe) { p.SuccessThreshold, p.FailureThreshold = success, failure }
}

func withPeriod(s int32) func(*corev1.Probe) {
	return func(p *corev1.Probe) { p.PeriodSeconds = s }
}

func withInitialDelay(s int32) func(*corev1.Probe) {
	return func(p *corev1.Probe) { p.InitialDelaySeconds = s }
}

// testPod is pod "default/web" (UID "uid-1") with one running container
// "app" of the given ID and probes.
func testPod(id string, probes probespec.ContainerProbes) node.Pod {
	return node.Pod{
		UID: "uid-1", Name: "web", Namespace: "default",
		IPs:         []string{"10.0.0.5"},
		Annotations: annotate(probespec.PodProbes{"app": probes}),
		Containers: []node.Container{{
			ID: id, Name: "app", State: node.StateRunning, StartedAt: epoch,
		}},
	}
}

// withState returns pod with its container's state changed.
func withState(pod node.Pod, s node.ContainerState) node.Pod {
	pod.Containers = append([]node.Container(nil), pod.Containers...)
	pod.Containers[0].State = s
	return pod
}

// withContainerID returns pod with a restarted container (new ID, running).
func withContainerID(pod node.Pod, id string, startedAt time.Time) node.Pod {
	pod.Containers = append([]node.Container(nil), pod.Containers...)
	pod.Containers[0].ID = id
	pod.Containers[0].State = node.StateRunning
	pod.Containers[0].StartedAt = startedAt
	return pod
}

// droppedTotal reads probelet_subscriber_dropped_total for stream.
func (h *harness) droppedTotal(stream string) float64 {
	h.t.Helper()
	mfs, err := h.reg.Gather()
	if err != nil {
		h.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "probelet_subscriber_dropped_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "stream" && lp.GetValue() == stream {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// labels returns the label sets of a metric's series.
func (h *harness) labels(name string) []map[string]string {
	h.t.Helper()
	mfs, err := h.reg.Gather()
	if err != nil {
		h.t.Fatal(err)
	}
	var out []map[string]string
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			out = append(out, l)
		}
	}
	return out
}

// rawSpecs parses annotations made by annotate as they are, without
// defaulting or validation, so tests hand the engine exactly the specs they
// built (including ones validation would reject: the engine must survive
// them).
type rawSpecs struct{}

func (rawSpecs) Parse(value string) *probespec.Parsed {
	var probes probespec.PodProbes
	if value != "" {
		if err := json.Unmarshal([]byte(value), &probes); err != nil {
			panic(fmt.Sprintf("rawSpecs: %v", err))
		}
	}
	return &probespec.Parsed{Value: value, Probes: probes}
}

// annotate returns pod annotations declaring probes.
func annotate(probes probespec.PodProbes) map[string]string {
	b, err := json.Marshal(probes)
	if err != nil {
		panic(err)
	}
	return map[string]string{probespec.AnnotationProbes: string(b)}
}
