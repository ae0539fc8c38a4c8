package probestate_test

import (
	"context"
	"crypto/tls"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	coordinationlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	probes "github.com/probelet/probelet/api/probes/v1alpha1"
	apiv1 "github.com/probelet/probelet/api/v1alpha1"
	"github.com/probelet/probelet/controller/probestate"
	"github.com/probelet/probelet/internal/selfsigned"
	"github.com/probelet/probelet/probespec"
)

const token = "state-token"

// fakeNode is a node's state listener: it answers ListExplained with
// answer, after delay, for the bearer token only.
type fakeNode struct {
	apiv1.UnimplementedProbeletServer
	answer *apiv1.ListExplainedResponse
	delay  time.Duration
	asked  chan *apiv1.ListExplainedRequest
	addr   string
	pin    string
}

func (n *fakeNode) ListExplained(ctx context.Context, req *apiv1.ListExplainedRequest) (*apiv1.ListExplainedResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	if got := md.Get("authorization"); len(got) != 1 || got[0] != "Bearer "+token {
		return nil, status.Error(codes.Unauthenticated, "token not accepted")
	}
	select {
	case n.asked <- req:
	default:
	}
	select {
	case <-time.After(n.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return n.answer, nil
}

func startNode(t *testing.T, answer *apiv1.ListExplainedResponse, delay time.Duration) *fakeNode {
	t.Helper()
	cert, pin, err := selfsigned.New("fake node", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	n := &fakeNode{answer: answer, delay: delay, asked: make(chan *apiv1.ListExplainedRequest, 16), addr: lis.Addr().String(), pin: pin}
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}})))
	apiv1.RegisterProbeletServer(srv, n)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return n
}

// garbageNode accepts and answers every connection with bytes that are
// neither TLS nor HTTP/2.
func garbageNode(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lis.Close() })
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			go func() {
				_, _ = c.Write([]byte(strings.Repeat("garbage\x00\xff", 1000)))
				time.Sleep(time.Second)
				c.Close()
			}()
		}
	}()
	return lis.Addr().String()
}

func lease(node, endpoint, pin string, renewed time.Time) *coordinationv1.Lease {
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: probespec.LeaseNamespace, Annotations: map[string]string{}},
		Spec: coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: renewed}, LeaseDurationSeconds: ptr.To[int32](40)}}
	if endpoint != "" {
		l.Annotations[probespec.AnnotationStateEndpoint] = endpoint
		l.Annotations[probespec.AnnotationStateCertSHA256] = pin
	}
	return l
}

type world struct {
	leases cache.Indexer
	nodes  cache.Indexer
	f      *probestate.Fetcher
}

func newWorld(t *testing.T, timeout time.Duration, maxAnswer int) *world {
	t.Helper()
	w := &world{leases: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}), nodes: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})}
	file := t.TempDir() + "/token"
	if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := probestate.NewFetcher(probestate.FetchOptions{
		Leases: coordinationlisters.NewLeaseLister(w.leases).Leases(probespec.LeaseNamespace), Nodes: corelisters.NewNodeLister(w.nodes),
		TokenFile: file, NodeTimeout: timeout, MaxAnswer: maxAnswer})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	w.f = f
	return w
}

func answerFor(pods ...string) *apiv1.ListExplainedResponse {
	resp := &apiv1.ListExplainedResponse{}
	for _, p := range pods {
		resp.Containers = append(resp.Containers, &apiv1.WhyResponse{Container: &apiv1.Container{PodNamespace: "a", PodName: p, ContainerName: "app"},
			Explanations: []*apiv1.Explanation{{Subject: "healthy", Text: "all probes pass"}}})
	}
	return resp
}

// TestFetchSaysWhyANodeDidNotAnswer: every way a node can fail gives its
// reason within the node timeout, and a good node answers.
func TestFetchSaysWhyANodeDidNotAnswer(t *testing.T) {
	const timeout = 500 * time.Millisecond
	good := startNode(t, answerFor("web"), 0)
	slow := startNode(t, answerFor("web"), time.Hour)
	huge := startNode(t, answerFor(strings.Repeat("x", 2<<20)), 0)
	garbage := garbageNode(t)
	_, otherPin, _ := selfsigned.New("impostor", time.Now())
	_, port, _ := net.SplitHostPort(good.addr)
	now := time.Now()
	for _, tc := range []struct {
		name   string
		lease  *coordinationv1.Lease
		node   *corev1.Node
		reason string
		answer bool
		words  string
	}{
		{name: "a good node", lease: lease("n", good.addr, good.pin, now), answer: true},
		{name: "a good node at its InternalIP", lease: lease("n", ":"+port, good.pin, now),
			node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}}}}, answer: true},
		{name: "no Lease", reason: probestate.ReasonProbeletUnavailable, words: "no probelet Lease"},
		{name: "an expired Lease", lease: lease("n", good.addr, good.pin, now.Add(-time.Minute)), reason: probestate.ReasonProbeletUnavailable, words: "not renewing"},
		{name: "no state listener", lease: lease("n", "", "", now), reason: probestate.ReasonNotServing, words: "--state-listen"},
		{name: "a silent node", lease: lease("n", slow.addr, slow.pin, now), reason: probestate.ReasonTimeout, words: "did not answer within 500ms"},
		{name: "a huge answer", lease: lease("n", huge.addr, huge.pin, now), reason: probestate.ReasonFailed, words: "bounded to 1048576 bytes"},
		{name: "garbage", lease: lease("n", garbage, good.pin, now), reason: probestate.ReasonFailed},
		{name: "another certificate", lease: lease("n", good.addr, otherPin, now), reason: probestate.ReasonFailed, words: "not the one its node's Lease names"},
		{name: "nothing listening", lease: lease("n", "127.0.0.1:1", good.pin, now), reason: probestate.ReasonFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, timeout, 1<<20)
			if tc.lease != nil {
				_ = w.leases.Add(tc.lease)
			}
			if tc.node != nil {
				_ = w.nodes.Add(tc.node)
			}
			start := time.Now()
			got, src := w.f.Fetch(context.Background(), "n", "a", nil)
			if took := time.Since(start); took > timeout+2*time.Second {
				t.Errorf("took %s, want within the node timeout", took)
			}
			if src.Answered != tc.answer || src.Reason != tc.reason || !strings.Contains(src.Message, tc.words) {
				t.Fatalf("source %+v, want answered %v, reason %q, words %q", src, tc.answer, tc.reason, tc.words)
			}
			if tc.answer && (len(got) != 1 || got[0].Container.PodName != "web") {
				t.Fatalf("answer %v, want web's container", got)
			}
		})
	}
}

// TestFetchAsksForTheNamespaceAndBounds: the node is asked for the
// namespace, the pods and the bounds on history and outputs.
func TestFetchAsksForTheNamespaceAndBounds(t *testing.T) {
	n := startNode(t, answerFor("web"), 0)
	w := newWorld(t, time.Second, 0)
	_ = w.leases.Add(lease("n", n.addr, n.pin, time.Now()))
	w.f.Fetch(context.Background(), "n", "a", []string{"web"})
	req := <-n.asked
	if req.Namespace != "a" || len(req.PodNames) != 1 || req.PodNames[0] != "web" ||
		req.HistoryLimit != probestate.DefaultHistoryLimit || req.OutputLimit != probestate.DefaultOutputLimit {
		t.Fatalf("asked %v", req)
	}
}

// TestANewProbeletIsDialledAgain: a restarted probelet (a new certificate
// in its Lease) is reached with the new pin.
func TestANewProbeletIsDialledAgain(t *testing.T) {
	first, second := startNode(t, answerFor("one"), 0), startNode(t, answerFor("two"), 0)
	w := newWorld(t, time.Second, 0)
	_ = w.leases.Add(lease("n", first.addr, first.pin, time.Now()))
	if got, src := w.f.Fetch(context.Background(), "n", "a", nil); !src.Answered || got[0].Container.PodName != "one" {
		t.Fatalf("first: %v %+v", got, src)
	}
	_ = w.leases.Update(lease("n", second.addr, second.pin, time.Now()))
	if got, src := w.f.Fetch(context.Background(), "n", "a", nil); !src.Answered || got[0].Container.PodName != "two" {
		t.Fatalf("after the restart: %v %+v", got, src)
	}
}

// TestHostileNodesCostOtherNodesNothing: a list over a good node and
// nodes that hang, answer garbage or answer a huge message answers the
// good node's pods in full, the others with why, within the node timeout.
func TestHostileNodesCostOtherNodesNothing(t *testing.T) {
	const timeout = 700 * time.Millisecond
	good := startNode(t, answerFor("good"), 0)
	slow := startNode(t, answerFor("slow"), time.Hour)
	huge := startNode(t, answerFor(strings.Repeat("x", 2<<20)), 0)
	garbage := garbageNode(t)
	w := newWorld(t, timeout, 1<<20)
	now := time.Now()
	for _, l := range []*coordinationv1.Lease{lease("good", good.addr, good.pin, now), lease("slow", slow.addr, slow.pin, now),
		lease("huge", huge.addr, huge.pin, now), lease("garbage", garbage, good.pin, now)} {
		_ = w.leases.Add(l)
	}
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, node := range []string{"good", "slow", "huge", "garbage"} {
		_ = idx.Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: node}, Spec: corev1.PodSpec{NodeName: node}})
	}
	s := probestate.NewStorage(corelisters.NewPodLister(idx), w.f)
	start := time.Now()
	obj, err := s.List(genericapirequest.WithNamespace(context.Background(), "a"), nil)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range obj.(*probes.PodProbesList).Items {
		if (p.Name == "good") != p.Source.Answered {
			t.Errorf("%s: %+v", p.Name, p.Source)
		}
	}
	if took > timeout+time.Second {
		t.Errorf("the list took %s, want about the node timeout %s", took, timeout)
	}
}
