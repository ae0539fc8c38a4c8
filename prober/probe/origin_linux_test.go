//go:build linux

package probe_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/probelet/probelet/internal/testutil"
	"github.com/probelet/probelet/internal/testutil/netnstest"
	"github.com/probelet/probelet/podnet"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/probe/grpcprobe"
	"github.com/probelet/probelet/prober/probe/httpprobe"
	"github.com/probelet/probelet/prober/probe/tcpprobe"
)

// serveHTTP answers on l (made in its namespace) with who asked.
func serveHTTP(l net.Listener) {
	go func() {
		_ = http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, "from "+r.RemoteAddr)
		}))
	}()
}

// serveGRPC answers Health/Check on l with SERVING.
func serveGRPC(t *testing.T, l net.Listener) {
	s := grpc.NewServer()
	healthpb.RegisterHealthServer(s, health.NewServer())
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
}

func port(l net.Listener) int { return l.Addr().(*net.TCPAddr).Port }

// originFixture is a pod's namespace with an HTTP server on its 127.0.0.1,
// one on the node's 127.0.0.1, and the pod's namespace pinned.
type originFixture struct {
	pod               *netnstest.NS
	podHTTP, nodeHTTP net.Listener
	pins              *podnet.Pins
	ns                *podnet.Namespace
}

func newOriginFixture(t *testing.T) *originFixture {
	t.Helper()
	f := &originFixture{pod: netnstest.New(t)}
	f.podHTTP = f.pod.Listen(t, "tcp", "127.0.0.1:0")
	serveHTTP(f.podHTTP)
	var err error
	if f.nodeHTTP, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.nodeHTTP.Close() })
	serveHTTP(f.nodeHTTP)
	if f.pins, err = podnet.NewPins(); err != nil {
		t.Fatal(err)
	}
	f.ns = f.pin(t)
	return f
}

// pin pins the pod's namespace once more for its sandbox.
func (f *originFixture) pin(t *testing.T) *podnet.Namespace {
	t.Helper()
	ns, err := f.pins.Open("sandbox-a", f.pod.Path, netip.MustParseAddr("127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ns.Close() })
	return ns
}

// Every kind of dialling probe, in both I/O modes, connects from the
// namespace its origin names: the pod's servers answer, the node's
// loopback servers are not there, and a namespace released under the
// probe is a prober error, never a Failure.
func TestProbesDialFromTheirOrigin(t *testing.T) {
	f := newOriginFixture(t)
	podHTTP, nodeHTTP, ns := f.podHTTP, f.nodeHTTP, f.ns
	podGRPC := f.pod.Listen(t, "tcp", "127.0.0.1:0")
	serveGRPC(t, podGRPC)
	released := f.pin(t)
	_ = released.Close()

	const timeout = 2 * time.Second
	type answer struct {
		res    probe.Result
		output string // a prefix
		err    string // a part; "" for none
	}
	kinds := map[string]func(ctx context.Context, origin *podnet.Namespace, port int) (probe.Result, string, error){
		"tcp": func(ctx context.Context, origin *podnet.Namespace, port int) (probe.Result, string, error) {
			d := tcpprobe.NewDialer()
			target := probe.TCPTarget{Host: "127.0.0.1", Port: port, Timeout: timeout}
			if origin != nil {
				target.Origin = origin
			}
			if res, out, _, pending, ok := d.StartTCP(target); ok {
				return res, out, nil
			} else if pending != nil {
				res, out, _, err := pending.Finish(ctx)
				return res, out, err
			}
			res, out, _, err := d.ProbeTCP(ctx, target)
			return res, out, err
		},
		"http": func(ctx context.Context, origin *podnet.Namespace, port int) (probe.Result, string, error) {
			return httpprobe.New().Probe(podnet.WithNamespace(ctx, origin), httpprobe.Target{Host: "127.0.0.1", Port: port, Timeout: timeout})
		},
		"grpc": func(ctx context.Context, origin *podnet.Namespace, port int) (probe.Result, string, error) {
			return grpcprobe.Probe(podnet.WithNamespace(ctx, origin), "127.0.0.1", port, "", timeout)
		},
	}
	refused := func(p int) string { return "dial tcp 127.0.0.1:" + strconv.Itoa(p) + ": connect: connection refused" }
	for _, tc := range []struct {
		name   string
		kind   string
		origin *podnet.Namespace
		port   int
		want   answer
	}{
		{"tcp to the pod's listener", "tcp", ns, port(podHTTP), answer{res: probe.Success}},
		{"tcp to the node's loopback", "tcp", ns, port(nodeHTTP), answer{res: probe.Failure, output: refused(port(nodeHTTP))}},
		{"tcp from the node", "tcp", nil, port(nodeHTTP), answer{res: probe.Success}},
		{"tcp from a released namespace", "tcp", released, port(podHTTP), answer{res: probe.Unknown, err: "was released"}},
		{"http to the pod's server, seen from the pod's loopback", "http", ns, port(podHTTP), answer{res: probe.Success, output: "from 127.0.0.1:"}},
		{"http to the node's loopback", "http", ns, port(nodeHTTP), answer{res: probe.Failure, output: "Get \"http://127.0.0.1:" + strconv.Itoa(port(nodeHTTP)) + "\": " + refused(port(nodeHTTP))}},
		{"http from a released namespace", "http", released, port(podHTTP), answer{res: probe.Unknown, err: "was released"}},
		{"grpc to the pod's server", "grpc", ns, port(podGRPC), answer{res: probe.Success, output: "service healthy"}},
		{"grpc to the node's loopback", "grpc", ns, port(nodeHTTP), answer{res: probe.Failure, output: "timeout: failed to connect service"}},
		{"grpc from a released namespace", "grpc", released, port(podGRPC), answer{res: probe.Unknown, err: "was released"}},
	} {
		testutil.EachIOMode(t, func(mode string) {
			t.Run(mode+"/"+tc.name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 3*timeout)
				defer cancel()
				start := time.Now()
				res, out, err := kinds[tc.kind](ctx, tc.origin, tc.port)
				if res != tc.want.res || !strings.HasPrefix(out, tc.want.output) {
					t.Errorf("= %v %q (%v), want %v %q…", res, out, err, tc.want.res, tc.want.output)
				}
				switch {
				case tc.want.err == "" && err != nil:
					t.Errorf("error %v", err)
				case tc.want.err != "" && (err == nil || !strings.Contains(err.Error(), tc.want.err)):
					t.Errorf("error %v, want one saying %q", err, tc.want.err)
				case tc.want.err != "" && time.Since(start) > timeout/2:
					t.Errorf("the prober error took %v: it waited as for the app", time.Since(start))
				}
			})
		})
	}
}

// An httpGet lifecycle hook from a pod's namespace (probelet's preStop
// before its own kill) reaches the pod's server and never the node's
// loopback, as the pod's probes do.
func TestLifecycleHookDialsFromItsOrigin(t *testing.T) {
	f := newOriginFixture(t)
	inPod, onNode := f.podHTTP, f.nodeHTTP
	ctx := podnet.WithNamespace(context.Background(), f.ns)
	client := httpprobe.LifecycleClient()
	if _, err := httpprobe.RunLifecycleGet(ctx, client, httpprobe.Target{Host: "127.0.0.1", Port: port(inPod), Path: "/"}); err != nil {
		t.Errorf("the hook to the pod's server: %v", err)
	}
	_, err := httpprobe.RunLifecycleGet(ctx, client, httpprobe.Target{Host: "127.0.0.1", Port: port(onNode), Path: "/"})
	if err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("the hook to the node's loopback: %v, want connection refused from the pod", err)
	}
}

// HTTPS probes of the same host and port from two pods' namespaces each
// reach their own pod's server, however many run at once: no HTTP/2
// connection dialled in one namespace answers a probe of another.
func TestHTTPSProbesNeverShareAConnectionAcrossNamespaces(t *testing.T) {
	a, b := netnstest.New(t), netnstest.New(t)
	la := a.Listen(t, "tcp", "127.0.0.1:0")
	lb := b.Listen(t, "tcp", la.Addr().String()) // the same address, in another namespace
	for name, l := range map[string]net.Listener{"a": la, "b": lb} {
		s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, name)
		}))
		s.Listener = l
		s.EnableHTTP2 = true
		s.StartTLS()
		t.Cleanup(s.Close)
	}
	pins, err := podnet.NewPins()
	if err != nil {
		t.Fatal(err)
	}
	origins := map[string]*podnet.Namespace{}
	for name, ns := range map[string]*netnstest.NS{"a": a, "b": b} {
		pinned, err := pins.Open("sandbox-"+name, ns.Path, netip.MustParseAddr("127.0.0.1"))
		if err != nil {
			t.Fatal(err)
		}
		defer pinned.Close()
		origins[name] = pinned
	}
	p := httpprobe.New()
	target := httpprobe.Target{Scheme: "HTTPS", Host: "127.0.0.1", Port: port(la), Timeout: 5 * time.Second}
	var wg sync.WaitGroup
	errs := make(chan string, 200)
	for i := range 200 {
		name := []string{"a", "b"}[i%2]
		wg.Go(func() {
			res, out, err := p.Probe(podnet.WithNamespace(context.Background(), origins[name]), target)
			if res != probe.Success || out != name || err != nil {
				errs <- fmt.Sprintf("a probe from %s: %v %q %v", name, res, out, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
