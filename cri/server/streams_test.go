package server_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	apiv1 "github.com/probelet/probelet/api/v1alpha1"
	"github.com/probelet/probelet/cri/server"
	"github.com/probelet/probelet/cri/server/servertest"
	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/prober/results"
	"github.com/probelet/probelet/probespec"
)

// resultChange returns a change with an output of size bytes; big outputs
// fill the HTTP/2 flow-control windows (up to 16 MiB) of a client that
// does not read, so the server's Send really blocks.
func resultChange(i, size int) prober.ResultChange {
	return prober.ResultChange{
		Time: servertest.Now, PodUID: "uid-web", PodName: "web", PodNamespace: "default",
		ContainerName: "app", ContainerID: servertest.WebAppID, Type: probespec.Readiness,
		Result: results.Result(i % 2), Output: strings.Repeat("x", size),
	}
}

func TestGetContainerEventsStreamsLifecycle(t *testing.T) {
	src, view := servertest.NewStatus(), servertest.NewView()
	_, endpoint := servertest.Start(t, src, view)
	rt := runtimeapi.NewRuntimeServiceClient(servertest.Dial(t, endpoint))
	stream, err := rt.GetContainerEvents(context.Background(), &runtimeapi.GetEventsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitFor(t, "the lifecycle subscription", func() bool { n, _, _ := view.EventStats(); return n == 1 })
	pod := servertest.Pods()[0]
	for _, typ := range []node.EventType{node.ContainerCreatedEvent, node.ContainerStartedEvent, node.ContainerStoppedEvent, node.ContainerDeletedEvent} {
		view.Publish(node.Event{Type: typ, Time: servertest.Now, PodUID: pod.UID, SandboxID: pod.SandboxID, ContainerID: servertest.WebAppID, Pod: pod})
	}
	for _, want := range []runtimeapi.ContainerEventType{
		runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT,
		runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT,
	} {
		ev, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if ev.ContainerEventType != want || ev.ContainerId != servertest.WebAppID ||
			ev.PodSandboxStatus.GetMetadata().GetName() != "web" || len(ev.ContainersStatuses) != 2 ||
			ev.CreatedAt != servertest.Now.UnixNano() {
			t.Fatalf("event %v, want %v for web/app with the pod's statuses", ev, want)
		}
	}
	// The source closing its subscriptions ends the stream.
	view.CloseSubscriptions()
	if _, err := stream.Recv(); status.Code(err) != codes.Unavailable {
		t.Fatalf("after the source closed: %v; want Unavailable", err)
	}
}

func TestClientDisconnectCancelsSubscriptions(t *testing.T) {
	src, view := servertest.NewStatus(), servertest.NewView()
	_, endpoint := servertest.Start(t, src, view)
	conn := servertest.Dial(t, endpoint)
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := apiv1.NewProbeletClient(conn).WatchResults(ctx, &apiv1.WatchResultsRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := runtimeapi.NewRuntimeServiceClient(conn).GetContainerEvents(ctx, &runtimeapi.GetEventsRequest{}); err != nil {
		t.Fatal(err)
	}
	servertest.WaitFor(t, "both subscriptions", func() bool {
		r, _, _ := src.ResultStats()
		v, _, _ := view.EventStats()
		return r == 1 && v == 1
	})
	cancel()
	servertest.WaitFor(t, "both subscriptions cancelled", func() bool {
		r, _, rc := src.ResultStats()
		v, _, vc := view.EventStats()
		return r == 0 && v == 0 && rc == 1 && vc == 1
	})
}

// neverReader is one stream kind for the never-reading-client test.
type neverReader struct {
	name     string
	open     func(ctx context.Context, conn *grpc.ClientConn) (recv func() error, err error)
	publish  func(i int)
	stats    func() (subscribers int, dropped uint64, cancelled int)
	buffered func() int
}

func neverReaders(src *servertest.Status, view *servertest.View) []neverReader {
	big := strings.Repeat("x", 256<<10) // fills flow-control windows fast
	return []neverReader{
		{
			name: "WatchResults",
			open: func(ctx context.Context, conn *grpc.ClientConn) (func() error, error) {
				s, err := apiv1.NewProbeletClient(conn).WatchResults(ctx, &apiv1.WatchResultsRequest{})
				return func() error { _, err := s.Recv(); return err }, err
			},
			publish:  func(i int) { src.PublishResult(resultChange(i, len(big))) },
			stats:    src.ResultStats,
			buffered: src.ResultsBuffered,
		},
		{
			name: "GetContainerEvents",
			open: func(ctx context.Context, conn *grpc.ClientConn) (func() error, error) {
				s, err := runtimeapi.NewRuntimeServiceClient(conn).GetContainerEvents(ctx, &runtimeapi.GetEventsRequest{})
				return func() error { _, err := s.Recv(); return err }, err
			},
			publish: func(i int) {
				pod := servertest.Pods()[0]
				pod.Annotations = map[string]string{"big": big}
				view.Publish(node.Event{Type: node.ContainerStartedEvent, ContainerID: servertest.WebAppID, Pod: pod})
			},
			stats:    view.EventStats,
			buffered: view.EventsBuffered,
		},
	}
}

// A client that opens a stream and never reads must not slow the
// publisher: the server drains the subscription, notices the client cannot
// keep up, cancels the subscription and ends the stream with
// ResourceExhausted.
func TestStreamClientThatNeverReads(t *testing.T) {
	src, view := servertest.NewStatus(), servertest.NewView()
	_, endpoint := servertest.Start(t, src, view, server.WithStreamQueue(16))
	for _, nr := range neverReaders(src, view) {
		t.Run(nr.name, func(t *testing.T) {
			recv, err := nr.open(context.Background(), servertest.Dial(t, endpoint))
			if err != nil {
				t.Fatal(err)
			}
			servertest.WaitFor(t, "the subscription", func() bool { n, _, _ := nr.stats(); return n == 1 })
			published := publishUntilCancelled(t, nr)
			// Once the client reads, it gets what was queued, then the reason.
			received := 0
			for err = recv(); err == nil; err = recv() {
				received++
			}
			if statusCode(err) != codes.ResourceExhausted {
				t.Fatalf("stream ended with %v; want ResourceExhausted", err)
			}
			if received == 0 || received >= published {
				t.Fatalf("received %d of %d messages; want some but not all", received, published)
			}
		})
	}
}

// maxPublished bounds the messages a never-reading client may take
// before the server cancels it: far more than the stream queue and the
// flow-control windows hold.
const maxPublished = 1000

// publishUntilCancelled publishes until the server cancels the
// subscription. Every publish returns at once (the fakes, like the real
// sources, drop for a full subscriber): this loop is probing carrying on.
// After each message it waits for the server to take it from the
// subscription, so the server's queue, not the publisher's drops, decides
// when the client is cut off.
func publishUntilCancelled(t *testing.T, nr neverReader) int {
	t.Helper()
	cancelled := func() bool { _, _, c := nr.stats(); return c == 1 }
	published := 0
	for !cancelled() {
		if published == maxPublished {
			t.Fatalf("the subscription is still open after %d messages", published)
		}
		nr.publish(published)
		published++
		servertest.WaitFor(t, "the server to take the message", func() bool { return cancelled() || nr.buffered() == 0 })
	}
	if subs, _, _ := nr.stats(); subs != 0 {
		t.Fatalf("after %d messages: %d subscribers; want the subscription cancelled", published, subs)
	}
	t.Logf("subscription cancelled after %d messages", published)
	return published
}

func statusCode(err error) codes.Code {
	var se interface{ GRPCStatus() *status.Status }
	if errors.As(err, &se) {
		return se.GRPCStatus().Code()
	}
	return codes.Unknown
}

// Stop must not hang on a handler stuck sending to a client that does not
// read: after the shutdown timeout it closes the connections.
func TestStopWithStuckClient(t *testing.T) {
	src, view := servertest.NewStatus(), servertest.NewView()
	clk := clocktesting.NewFakeClock(servertest.Now)
	srv, endpoint := servertest.Start(t, src, view, server.WithStreamQueue(4), server.WithClock(clk))
	if _, err := apiv1.NewProbeletClient(servertest.Dial(t, endpoint)).WatchResults(context.Background(), &apiv1.WatchResultsRequest{}); err != nil {
		t.Fatal(err)
	}
	servertest.WaitFor(t, "the watch subscription", func() bool { n, _, _ := src.ResultStats(); return n == 1 })
	cancelled := func() bool { _, _, c := src.ResultStats(); return c == 1 }
	for i := 0; !cancelled(); i++ {
		if i == maxPublished {
			t.Fatalf("the watch is still subscribed after %d changes", i)
		}
		src.PublishResult(resultChange(i, 1<<20))
		servertest.WaitFor(t, "the server to take the change", func() bool { return cancelled() || src.ResultsBuffered() == 0 })
	}
	stopped := make(chan struct{})
	go func() { srv.Stop(); close(stopped) }()
	servertest.WaitFor(t, "Stop to wait for the stuck handler", clk.HasWaiters)
	select {
	case <-stopped:
		t.Fatal("Stop returned while a handler was stuck; the test proves nothing")
	default:
	}
	clk.Step(5 * time.Second)
	<-stopped
}

func TestStopEndsFollowers(t *testing.T) {
	src, view := servertest.NewStatus(), servertest.NewView()
	srv, endpoint := servertest.Start(t, src, view)
	stream, err := apiv1.NewProbeletClient(servertest.Dial(t, endpoint)).Events(context.Background(), &apiv1.EventsRequest{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	servertest.WaitFor(t, "the event log subscription", func() bool { n, _, _ := src.EventStats(); return n == 1 })
	go srv.Stop()
	if _, err := stream.Recv(); statusCode(err) != codes.Unavailable {
		t.Fatalf("follower after Stop: %v; want Unavailable", err)
	}
	servertest.WaitFor(t, "the event log to unsubscribe", func() bool { n, _, c := src.EventStats(); return n == 0 && c == 1 })
}
