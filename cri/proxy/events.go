package proxy

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/probelet/probelet/internal/fanout"
)

// subscriberBuffer is each event stream's buffer: a full node's worth of
// churn. A kubelet that falls further behind loses events (counted); its
// periodic relist still sees every change.
const subscriberBuffer = 1024

// hint is why the announcer looks at an ID again.
type hint struct {
	sandbox   bool
	sandboxID string
	// at is when probelet first heard of the change: the event's time.
	at time.Time
	// removal is set for containerd's announcement of a removal, which
	// the announcer confirms (removalStarted); retry is the wait before
	// it asks again while containerd still shows the ID.
	removal bool
	retry   time.Duration
}

// item is what the announcer last announced about one ID.
type item struct {
	sandbox   bool
	sandboxID string
	phase     phase
	started   bool
}

// announcer serves GetContainerEvents from probelet. Every change it
// hears of (an NRI event through the node cache, an event on containerd's
// own stream) makes it ask containerd for that sandbox or container and
// announce the CRI events between what it announced before and what
// containerd now says. Asking first matters: containerd calls NRI's
// StopContainer before it records the exit, so a kubelet that relisted on
// an NRI-timed event could still read RUNNING and miss the exit until its
// next periodic relist. Asking also fills the memo the kubelet's relist
// then reads.
//
// When containerd comes back after a restart (or probelet lost node cache
// events), the announcer lists everything again and announces whatever
// changed meanwhile: exits, removals, new containers. The kubelet's
// stream, held by probelet, never breaks on a runtime restart.
type announcer struct {
	p   *Proxy
	hub *fanout.Hub[*runtimeapi.ContainerEventResponse]

	mu         sync.Mutex
	pending    map[string]hint
	order      []string
	wantResync bool
	wake       chan struct{}

	// Owned by the run goroutine.
	baseline bool
	known    map[string]*item
	// lastSB is each live sandbox's last status, for the events about it
	// once containerd has none: without its annotations (see remember).
	lastSB map[string]*runtimeapi.PodSandboxStatus
}

func newAnnouncer(p *Proxy) *announcer {
	return &announcer{
		p:       p,
		hub:     fanout.New[*runtimeapi.ContainerEventResponse](func() { p.m.eventsLost.Inc() }),
		pending: map[string]hint{},
		wake:    make(chan struct{}, 1),
		known:   map[string]*item{},
		lastSB:  map[string]*runtimeapi.PodSandboxStatus{},
	}
}

// enqueue asks the announcer to look at id; repeated requests for an ID
// not yet looked at merge (the earliest time and the latest NRI
// snapshot win).
func (a *announcer) enqueue(id string, h hint) {
	if id == "" {
		return
	}
	a.mu.Lock()
	if old, ok := a.pending[id]; ok {
		if old.at.Before(h.at) {
			h.at = old.at
		}
		h.sandbox = h.sandbox || old.sandbox
		h.removal = h.removal || old.removal
		h.retry = max(h.retry, old.retry)
		if h.sandboxID == "" {
			h.sandboxID = old.sandboxID
		}
	} else {
		a.order = append(a.order, id)
	}
	a.pending[id] = h
	a.mu.Unlock()
	a.poke()
}

// resync asks the announcer to list everything again.
func (a *announcer) resync() {
	a.mu.Lock()
	a.wantResync = true
	a.mu.Unlock()
	a.poke()
}

func (a *announcer) poke() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// run works through resyncs and pending IDs until ctx ends.
func (a *announcer) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.wake:
		}
		a.mu.Lock()
		resync := a.wantResync
		a.wantResync = false
		a.mu.Unlock()
		if resync && !a.resyncNow(ctx) {
			// containerd is not answering; the next (re)connect of its
			// event stream asks again.
			continue
		}
		if !a.baseline {
			continue // nothing to compare with yet; kept pending
		}
		for {
			id, h, ok := a.next()
			if !ok {
				break
			}
			a.check(ctx, id, h)
		}
	}
}

func (a *announcer) next() (string, hint, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for len(a.order) > 0 {
		id := a.order[0]
		a.order = a.order[1:]
		if h, ok := a.pending[id]; ok {
			delete(a.pending, id)
			return id, h, true
		}
	}
	a.order = nil
	return "", hint{}, false
}

// check asks containerd about one ID and announces what changed.
func (a *announcer) check(ctx context.Context, id string, h hint) {
	it := a.known[id]
	if it == nil {
		it = &item{sandbox: h.sandbox, sandboxID: h.sandboxID}
	}
	cur, started, ok := a.ask(ctx, id, it, h)
	if h.removal {
		a.confirmRemoval(id, h, ok && cur == phaseGone)
	}
	if !ok {
		return
	}
	a.advance(id, it, cur, started, h.at)
}

const (
	// removalRetryMin and removalRetryMax pace asking containerd again
	// about a sandbox it announced as removed but still shows: it drops
	// the sandbox from its store once NRI's RemovePodSandbox returned,
	// within milliseconds on a healthy node.
	removalRetryMin = 10 * time.Millisecond
	removalRetryMax = time.Second
	// removalWait is how long the memo stays off for such a sandbox
	// before the announcer gives up on seeing it go.
	removalWait = time.Minute
)

// confirmRemoval ends the memo's removal state for id once containerd no
// longer shows it (gone), or else asks again later.
func (a *announcer) confirmRemoval(id string, h hint, gone bool) {
	if gone {
		a.p.memo.removalDone(id)
		return
	}
	if waited := a.p.clock.Since(h.at); waited >= removalWait {
		a.p.log.Warn("The runtime still shows a sandbox it announced as removed; caching its answers again",
			zap.String("id", id), zap.Duration("waited", waited))
		a.p.memo.removalDone(id)
		return
	}
	h.retry = min(max(2*h.retry, removalRetryMin), removalRetryMax)
	wait := a.p.clock.After(h.retry)
	go func() {
		<-wait
		a.enqueue(id, h)
	}()
}

// ask returns containerd's phase for id, or, when containerd cannot be
// asked, the phase the NRI hint reports.
func (a *announcer) ask(ctx context.Context, id string, it *item, h hint) (phase, bool, bool) {
	if !it.sandbox {
		var r runtimeapi.ContainerStatusResponse
		err := a.p.typedRead(ctx, mContainerStatus, &runtimeapi.ContainerStatusRequest{ContainerId: id}, &r)
		switch {
		case err == nil:
			if it.sandboxID == "" {
				it.sandboxID = h.sandboxID
			}
			return containerPhase(r.GetStatus().GetState()), r.GetStatus().GetStartedAt() != 0, true
		case status.Code(err) == codes.NotFound && (it.sandboxID != "" || a.known[id] != nil):
			return phaseGone, it.started, true
		case status.Code(err) != codes.NotFound:
			return a.unanswered(err)
		}
		// Not a container we know: perhaps a sandbox.
		it.sandbox = true
	}
	var r runtimeapi.PodSandboxStatusResponse
	err := a.p.typedRead(ctx, mPodSandboxStatus, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id}, &r)
	switch {
	case err == nil:
		it.sandboxID = id
		a.remember(id, r.GetStatus())
		return sandboxPhase(r.GetStatus().GetState()), true, true
	case status.Code(err) == codes.NotFound:
		it.sandboxID = id
		return phaseGone, true, true
	}
	return a.unanswered(err)
}

// unanswered leaves a change containerd could not be asked about to the
// resync that follows its return.
func (a *announcer) unanswered(err error) (phase, bool, bool) {
	a.p.log.Debug("Cannot ask the runtime about a change; the next resync will", zap.Error(err))
	return 0, false, false
}

// advance announces the events from it's phase to cur and records cur.
func (a *announcer) advance(id string, it *item, cur phase, started bool, at time.Time) {
	types := transitions(it.phase, cur, it.sandbox, started || it.started)
	if cur > it.phase {
		it.phase = cur
	}
	it.started = it.started || started
	if it.phase == phaseGone {
		delete(a.known, id)
	} else {
		a.known[id] = it
	}
	for _, t := range types {
		a.publish(id, it, t, at)
	}
	if it.phase == phaseGone && it.sandbox {
		delete(a.lastSB, id)
	}
}

// publish sends one event with the sandbox's status and its containers'
// statuses, as containerd's own events carry them.
func (a *announcer) publish(id string, it *item, t runtimeapi.ContainerEventType, at time.Time) {
	a.p.m.eventsSent.WithLabelValues(t.String()).Inc()
	if !a.hub.Active() {
		return
	}
	ev := &runtimeapi.ContainerEventResponse{
		ContainerId:        id,
		ContainerEventType: t,
		CreatedAt:          at.UnixNano(),
	}
	ctx, cancel := context.WithTimeout(context.Background(), contentTimeout)
	defer cancel()
	ev.PodSandboxStatus = a.sandboxStatus(ctx, it.sandboxID)
	for cid, c := range a.known {
		if c.sandbox || c.sandboxID != it.sandboxID {
			continue
		}
		var r runtimeapi.ContainerStatusResponse
		if err := a.p.typedRead(ctx, mContainerStatus, &runtimeapi.ContainerStatusRequest{ContainerId: cid}, &r); err == nil {
			ev.ContainersStatuses = append(ev.ContainersStatuses, r.GetStatus())
		}
	}
	a.hub.Publish(ev)
}

// contentTimeout bounds the reads that fill one event.
const contentTimeout = 2 * time.Second

// sandboxStatus is containerd's status of the sandbox, or its last one
// (a removed sandbox has none).
func (a *announcer) sandboxStatus(ctx context.Context, id string) *runtimeapi.PodSandboxStatus {
	if id == "" {
		return nil
	}
	var r runtimeapi.PodSandboxStatusResponse
	if err := a.p.typedRead(ctx, mPodSandboxStatus, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id}, &r); err == nil {
		a.remember(id, r.GetStatus())
		return r.GetStatus()
	}
	return a.lastSB[id]
}

// remember keeps sandbox id's status for when it is gone, every field but
// its annotations: a tenant writes those (up to the API server's 256 KiB a
// pod, on every pod of the node), and the kubelet reads a removed
// sandbox's identity, state and network from an event, never its
// annotations. The fields are shared, not copied: statuses are never
// changed once read.
func (a *announcer) remember(id string, s *runtimeapi.PodSandboxStatus) {
	if s == nil {
		return
	}
	a.lastSB[id] = withoutAnnotations(s)
}

func withoutAnnotations(s *runtimeapi.PodSandboxStatus) *runtimeapi.PodSandboxStatus {
	kept := &runtimeapi.PodSandboxStatus{}
	dst := kept.ProtoReflect()
	s.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Name() != "annotations" {
			dst.Set(fd, v)
		}
		return true
	})
	return kept
}

// serve streams the events to one caller until it goes away or the proxy
// stops.
func (a *announcer) serve(ss grpc.ServerStream) error {
	if err := ss.RecvMsg(&frame{}); err != nil {
		return err
	}
	events, cancel := a.hub.Subscribe(subscriberBuffer)
	defer cancel()
	a.p.m.eventStreams.Inc()
	defer a.p.m.eventStreams.Dec()
	for {
		select {
		case <-ss.Context().Done():
			return ss.Context().Err()
		case ev, ok := <-events:
			if !ok {
				return status.Error(codes.Unavailable, "probelet is stopping")
			}
			data, err := proto.Marshal(ev)
			if err != nil {
				return err
			}
			if err := ss.SendMsg(&frame{data: data}); err != nil {
				return err
			}
		}
	}
}

// close ends every stream.
func (a *announcer) close() { a.hub.Close() }
