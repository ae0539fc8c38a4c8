package proxy_test

import (
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/probelet/probelet/cri/proxy"
	itu "github.com/probelet/probelet/internal/testutil"
)

// TestForwardKeepsEverything: a forwarded call reaches the runtime with
// the caller's request, metadata and deadline, and the caller gets the
// runtime's response, header and trailer.
func TestForwardKeepsEverything(t *testing.T) {
	rt := startFakeRuntime(t)
	h := startProxy(t, rt)
	ctx := metadata.AppendToOutgoingContext(ctxT(t), "x-kubelet", "k1")
	deadline := time.Now().Add(5 * time.Second)
	ctx, cancel := contextWithDeadline(ctx, deadline)
	defer cancel()
	var header, trailer metadata.MD
	resp, err := h.cli.Version(ctx, &runtimeapi.VersionRequest{Version: "0.1.0"}, grpc.Header(&header), grpc.Trailer(&trailer))
	if err != nil {
		t.Fatal(err)
	}
	seen, err := strconv.ParseInt(resp.GetRuntimeVersion(), 10, 64)
	if err != nil {
		t.Fatalf("runtime saw no deadline: %v", resp)
	}
	// gRPC sends the time left, rounded up to its unit; the runtime's
	// deadline is the caller's within transit and rounding.
	if d := deadline.Sub(time.UnixMilli(seen)); d < -50*time.Millisecond || d > time.Second {
		t.Errorf("runtime's deadline is %v before the caller's, want the caller's (less transit)", d)
	}
	resp.RuntimeVersion = ""
	want := &runtimeapi.VersionResponse{Version: "0.1.0", RuntimeName: "fake", RuntimeApiVersion: "v1"}
	if !proto.Equal(resp, want) {
		t.Errorf("Version = %v, want %v", resp, want)
	}
	if got := header.Get("x-runtime-header"); len(got) != 1 || got[0] != "h" {
		t.Errorf("header x-runtime-header = %q", got)
	}
	if got := trailer.Get("x-runtime-trailer"); len(got) != 1 || got[0] != "t" {
		t.Errorf("trailer x-runtime-trailer = %q", got)
	}
	rt.mu.Lock()
	md := rt.lastMD["Version"]
	rt.mu.Unlock()
	if got := md.Get("x-kubelet"); len(got) != 1 || got[0] != "k1" {
		t.Errorf("runtime saw x-kubelet = %q", got)
	}
	// What the kubelet sends: CRI-O's socket (cmux) drops a connection
	// whose first call says anything else.
	if got := md.Get("content-type"); len(got) != 1 || got[0] != "application/grpc" {
		t.Errorf("runtime saw content-type %q, want the kubelet's application/grpc", got)
	}
}

// TestForwardKeepsErrors: codes, messages and details arrive unchanged,
// for forwarded and for cached methods.
func TestForwardKeepsErrors(t *testing.T) {
	rt := startFakeRuntime(t)
	h := startProxy(t, rt)
	h.waitLive(t)
	st, err := status.New(codes.FailedPrecondition, "runtime says no").WithDetails(wrapperspb.String("detail"))
	if err != nil {
		t.Fatal(err)
	}
	for _, method := range []string{"Version", "ListContainers"} {
		rt.mu.Lock()
		rt.failNext[method] = st.Err()
		rt.mu.Unlock()
		var callErr error
		if method == "Version" {
			_, callErr = h.cli.Version(ctxT(t), &runtimeapi.VersionRequest{})
		} else {
			_, callErr = h.cli.ListContainers(ctxT(t), &runtimeapi.ListContainersRequest{})
		}
		got := status.Convert(callErr)
		if got.Code() != codes.FailedPrecondition || got.Message() != "runtime says no" || len(got.Details()) != 1 {
			t.Errorf("%s error = %v (details %v), want the runtime's", method, got.Err(), got.Details())
		} else if d := got.Details()[0].(*wrapperspb.StringValue); d.GetValue() != "detail" {
			t.Errorf("%s detail = %v", method, d)
		}
	}
}

// TestForwardUnknownMethod: a method this build does not know (a newer
// kubelet's) is forwarded too.
func TestForwardUnknownMethod(t *testing.T) {
	rt := startFakeRuntime(t)
	h := startProxy(t, rt)
	var out wrapperspb.StringValue
	const method = "/runtime.v1.RuntimeService/FutureMethod"
	if err := h.conn.Invoke(ctxT(t), method, wrapperspb.String("x"), &out); err != nil {
		t.Fatal(err)
	}
	if out.GetValue() != method+"(x)" {
		t.Errorf("FutureMethod = %q", out.GetValue())
	}
	if n := rt.count(method); n != 1 {
		t.Errorf("runtime saw %d calls, want 1", n)
	}
}

// TestForwardStreams: with forwarded events, GetContainerEvents is the
// runtime's stream, message by message.
func TestForwardStreams(t *testing.T) {
	rt := startFakeRuntime(t)
	h := startProxy(t, rt, proxy.WithForwardedEvents())
	<-rt.streamOpened // the proxy's own follower
	stream, err := h.cli.GetContainerEvents(ctxT(t), &runtimeapi.GetEventsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	<-rt.streamOpened // the caller's, forwarded
	for i := range 3 {
		rt.emit(&runtimeapi.ContainerEventResponse{ContainerId: "c", CreatedAt: int64(i)})
	}
	for i := range 3 {
		ev, err := stream.Recv()
		if err != nil {
			t.Fatal(err)
		}
		if ev.GetCreatedAt() != int64(i) {
			t.Errorf("event %d: CreatedAt %d", i, ev.GetCreatedAt())
		}
	}
}

// TestForwardWhileRuntimeDown: the caller gets Unavailable, as from a
// runtime that is down, and calls work again once it is back.
func TestForwardWhileRuntimeDown(t *testing.T) {
	rt := startFakeRuntime(t)
	h := startProxy(t, rt)
	if _, err := h.cli.Version(ctxT(t), &runtimeapi.VersionRequest{}); err != nil {
		t.Fatal(err)
	}
	rt.stop()
	if _, err := h.cli.Version(ctxT(t), &runtimeapi.VersionRequest{}); status.Code(err) != codes.Unavailable {
		t.Errorf("Version with the runtime down = %v, want Unavailable", err)
	}
	rt.start()
	itu.WaitFor(t, "calls to work again", func() bool {
		_, err := h.cli.Version(ctxT(t), &runtimeapi.VersionRequest{})
		return err == nil
	})
}
