package proxy

import (
	"context"
	"errors"
	"io"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/probelet/probelet/internal/retry"
)

const (
	// watchMinBackoff and watchMaxBackoff pace reconnecting to the
	// runtime's event stream: a restarted containerd is back within a
	// second or so, and the memo serves nothing until the stream is.
	watchMinBackoff = 50 * time.Millisecond
	watchMaxBackoff = time.Second
	// noEventsRetry is how often a runtime that ends the stream at once
	// (CRI-O without enable_pod_events) is asked for it again.
	noEventsRetry = 30 * time.Second
)

// watchRuntime follows containerd's own container event stream until ctx
// ends. containerd sends an event after its store reflects the change (a
// sandbox's removal aside, which the announcer confirms), so the stream is
// the memo's authoritative invalidation: the memo keeps
// answers only while it is connected, and every (re)connect makes the
// announcer list again and announce what changed while it was down.
func (p *Proxy) watchRuntime(ctx context.Context) {
	backoff := retry.Backoff(watchMinBackoff, watchMaxBackoff)
	saidNoEvents := false
	for ctx.Err() == nil {
		wait := time.Duration(0)
		stream, err := p.rt.GetContainerEvents(ctx, &runtimeapi.GetEventsRequest{})
		if err == nil {
			opened := p.clock.Now()
			backoff = retry.Backoff(watchMinBackoff, watchMaxBackoff)
			// The gauge goes up before the memo may keep answers and
			// down after it stopped: a memo answer is never seen with
			// the gauge at 0.
			p.m.runtimeStream.Set(1)
			p.memo.setLive(true)
			p.log.Info("Following the runtime's container events")
			p.events.resync()
			err = p.follow(stream)
			p.memo.setLive(false)
			p.m.runtimeStream.Set(0)
			p.m.invalidations.WithLabelValues(sourceStream).Inc()
			if ctx.Err() != nil {
				return
			}
			if status.Code(err) == codes.Unimplemented {
				// A runtime without the stream: nothing would ever tell the
				// memo of a change, so it stays off and every call is
				// forwarded.
				p.log.Error("The runtime has no container event stream; the CRI proxy forwards every call and caches nothing", zap.Error(err))
				return
			}
			switch {
			case errors.Is(err, io.EOF) && p.clock.Since(opened) < time.Second:
				// Ended at once with nothing sent: CRI-O's answer unless
				// enable_pod_events is set. Asked again now and then.
				wait = noEventsRetry
				if !saidNoEvents {
					saidNoEvents = true
					p.log.Error("The runtime ends its container event stream at once (CRI-O does unless enable_pod_events = true); the CRI proxy forwards every call and caches nothing until it streams",
						zap.Duration("askingEvery", noEventsRetry))
				}
			default:
				p.log.Warn("The runtime's container event stream ended; answering from the runtime until it is back", zap.Error(err))
			}
		}
		if wait == 0 {
			wait = backoff.Step()
		}
		select {
		case <-ctx.Done():
			return
		case <-p.clock.After(wait):
		}
	}
}

// follow invalidates and announces on every runtime event until the
// stream ends.
func (p *Proxy) follow(stream runtimeapi.RuntimeService_GetContainerEventsClient) error {
	for {
		ev, err := stream.Recv()
		if err != nil {
			return err
		}
		id := ev.GetContainerId()
		sandbox := ev.GetPodSandboxStatus().GetId()
		h := hint{sandbox: sandbox != "" && sandbox == id, sandboxID: sandbox, at: p.clock.Now()}
		// A sandbox's removal (its event names no other sandbox) is
		// announced before containerd's store drops it: the memo keeps
		// nothing that shows it until the announcer sees it gone.
		if ev.GetContainerEventType() == runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT && (sandbox == "" || sandbox == id) {
			h.removal = true
			p.memo.removalStarted(id)
		} else {
			p.memo.invalidate(id, sandbox)
		}
		p.m.invalidations.WithLabelValues(sourceRuntime).Inc()
		p.events.enqueue(id, h)
		if p.exec != nil && !h.sandbox {
			switch ev.GetContainerEventType() {
			case runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT:
				p.exec.Forget(id)
			}
		}
	}
}
