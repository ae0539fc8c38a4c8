package proxy_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/probelet/probelet/cri/proxy"
	itu "github.com/probelet/probelet/internal/testutil"
)

func clone[T proto.Message](m T) T { return proto.Clone(m).(T) }

// harness is a proxy in front of a fake runtime, with a client to it.
type harness struct {
	t    testing.TB
	rt   *fakeRuntime
	p    *proxy.Proxy
	reg  *prometheus.Registry
	conn *grpc.ClientConn
	cli  runtimeapi.RuntimeServiceClient
	stop func()
}

func startProxy(t testing.TB, rt *fakeRuntime, opts ...proxy.Option) *harness {
	t.Helper()
	reg := prometheus.NewRegistry()
	p, err := proxy.New(rt.endpoint(), append([]proxy.Option{proxy.WithRegisterer(reg)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "pxy")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "proxy.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx, l) }()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, rt: rt, p: p, reg: reg, conn: conn, cli: runtimeapi.NewRuntimeServiceClient(conn)}
	var stopped bool
	h.stop = func() {
		if stopped {
			return
		}
		stopped = true
		conn.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve = %v", err)
		}
		p.Close()
		os.RemoveAll(dir)
	}
	t.Cleanup(h.stop)
	return h
}

// waitLive waits until the proxy follows the runtime's event stream (the
// memo keeps answers only then) and has taken its baseline listing.
func (h *harness) waitLive(t testing.TB) {
	t.Helper()
	itu.WaitFor(t, "the proxy to follow the runtime's events", func() bool {
		return h.gauge("probelet_cri_proxy_runtime_events_connected") == 1 && h.counter("probelet_cri_proxy_resyncs_total") >= 1
	})
}

func (h *harness) counter(name string, labels ...string) float64 {
	pairs := map[string]string{}
	for i := 0; i+1 < len(labels); i += 2 {
		pairs[labels[i]] = labels[i+1]
	}
	return itu.Metric(h.t, h.reg, name, pairs)
}

func (h *harness) gauge(name string) float64 { return itu.Metric(h.t, h.reg, name, nil) }

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func contextWithDeadline(ctx context.Context, d time.Time) (context.Context, context.CancelFunc) {
	return context.WithDeadline(ctx, d)
}

var errUnavailable = status.Error(codes.Unavailable, "runtime is starting")

func waitCounter(t *testing.T, h *harness, name string, want float64, labels ...string) {
	t.Helper()
	itu.WaitFor(t, name, func() bool { return h.counter(name, labels...) >= want })
}

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// heldSocket binds a socket in a new directory as systemd does for a
// socket unit, and returns its path and a descriptor of it to pass on.
func heldSocket(t *testing.T) (string, *os.File) {
	t.Helper()
	dir, err := os.MkdirTemp("", "pxy")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "cri.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	f, err := l.File()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return sock, f
}
