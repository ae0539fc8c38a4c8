// Package probestate serves the probe-state API's reads
// (probes.probelet.io/v1alpha1 PodProbes): it finds a pod's node, asks that
// node's probelet over its state listener — pinned to the certificate the
// node's Lease names, with a token for the probe-state audience that the
// node has the API server review — and answers with what the node said, or
// with why it could not (its probelet silent, not serving, refusing, slow,
// or answering nonsense). Nothing is stored: every read asks the nodes,
// each within its own timeout, so one node cannot hold up another's pods.
package probestate

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationlisters "k8s.io/client-go/listers/coordination/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/utils/clock"

	probes "github.com/probelet/probelet/api/probes/v1alpha1"
	apiv1 "github.com/probelet/probelet/api/v1alpha1"
	"github.com/probelet/probelet/internal/selfsigned"
	"github.com/probelet/probelet/probespec"
)

// Why a PodProbes has no containers (probes.Source.Reason).
const (
	ReasonNotScheduled        = "NotScheduled"
	ReasonProbeletUnavailable = probespec.ReasonProbeletUnavailable
	ReasonNotServing          = "NotServing"
	ReasonTimeout             = "Timeout"
	ReasonRefused             = "Refused"
	ReasonFailed              = "Failed"
)

// Defaults of FetchOptions.
const (
	DefaultNodeTimeout  = 2 * time.Second
	DefaultMaxAnswer    = 16 << 20
	DefaultHistoryLimit = 10
	DefaultOutputLimit  = 1024
	// tokenReread is how often the token file is read again: the kubelet
	// rotates a projected token at 80% of its life (an hour at least).
	tokenReread = time.Minute
	// idleConn is how long a node's connection is kept unused.
	idleConn = 2 * time.Minute
)

// FetchOptions configure a Fetcher.
type FetchOptions struct {
	// Leases lists probelet's node Leases (its namespace); Nodes the
	// nodes, for the InternalIP of an endpoint without a host.
	Leases coordinationlisters.LeaseNamespaceLister
	Nodes  corelisters.NodeLister
	// TokenFile holds a token for the audience probespec.StateAudience
	// (a projected ServiceAccount token); read again every minute.
	TokenFile string
	// NodeTimeout bounds each node's answer (DefaultNodeTimeout); MaxAnswer
	// its size in bytes (DefaultMaxAnswer).
	NodeTimeout time.Duration
	MaxAnswer   int
	// HistoryLimit and OutputLimit are asked of the nodes: runs per probe
	// and bytes per output (DefaultHistoryLimit, DefaultOutputLimit).
	HistoryLimit, OutputLimit int
	Clock                     clock.PassiveClock
	// Dial, when set, replaces the TCP dial (tests).
	Dial func(ctx context.Context, addr string) (net.Conn, error)
}

// Fetcher asks nodes for their probe state.
type Fetcher struct {
	o     FetchOptions
	mu    sync.Mutex
	conns map[string]*grpc.ClientConn // by node; conn's target and pin in pins
	pins  map[string]string
	token struct {
		value string
		read  time.Time
		err   error
	}
}

// NewFetcher returns a Fetcher; it starts nothing.
func NewFetcher(o FetchOptions) (*Fetcher, error) {
	if o.Leases == nil || o.Nodes == nil || o.TokenFile == "" {
		return nil, errors.New("probestate: the Lease and node listers and a token file are required")
	}
	if o.NodeTimeout <= 0 {
		o.NodeTimeout = DefaultNodeTimeout
	}
	if o.MaxAnswer <= 0 {
		o.MaxAnswer = DefaultMaxAnswer
	}
	if o.HistoryLimit <= 0 {
		o.HistoryLimit = DefaultHistoryLimit
	}
	if o.OutputLimit <= 0 {
		o.OutputLimit = DefaultOutputLimit
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return &Fetcher{o: o, conns: map[string]*grpc.ClientConn{}, pins: map[string]string{}}, nil
}

// Close closes every node connection.
func (f *Fetcher) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for n, c := range f.conns {
		c.Close()
		delete(f.conns, n)
	}
}

// Fetch asks node for the containers of namespace's pods (names: only
// these; empty: all). The Source says whether it answered and, if not, why.
func (f *Fetcher) Fetch(ctx context.Context, node, namespace string, names []string) ([]*apiv1.WhyResponse, probes.Source) {
	src := probes.Source{ObservedTime: metav1.NewTime(f.o.Clock.Now())}
	refuse := func(reason, format string, args ...any) ([]*apiv1.WhyResponse, probes.Source) {
		src.Reason, src.Message = reason, fmt.Sprintf(format, args...)
		return nil, src
	}
	if node == "" {
		return refuse(ReasonNotScheduled, "the pod is not bound to a node yet")
	}
	lease, err := f.o.Leases.Get(node)
	if apierrors.IsNotFound(err) {
		return refuse(ReasonProbeletUnavailable, "node %s has no probelet Lease: probelet has never run there, or not with the API server", node)
	}
	if err != nil {
		return refuse(ReasonFailed, "node %s's probelet Lease: %v", node, err)
	}
	if until, ok := leaseEnd(lease.Spec.RenewTime, lease.Spec.LeaseDurationSeconds); !ok || f.o.Clock.Now().After(until) {
		return refuse(ReasonProbeletUnavailable, "probelet on node %s is not renewing its Lease (last renewed %s): it is down or not probing", node, renewed(lease.Spec.RenewTime))
	}
	endpoint, pin := lease.Annotations[probespec.AnnotationStateEndpoint], lease.Annotations[probespec.AnnotationStateCertSHA256]
	if endpoint == "" || pin == "" {
		return refuse(ReasonNotServing, "probelet on node %s does not serve its probe state (no --state-listen)", node)
	}
	addr, err := f.address(node, endpoint)
	if err != nil {
		return refuse(ReasonFailed, "%v", err)
	}
	token, err := f.readToken()
	if err != nil {
		return refuse(ReasonFailed, "the controller's token for nodes: %v", err)
	}
	conn, err := f.conn(node, addr, pin)
	if err != nil {
		return refuse(ReasonFailed, "node %s at %s: %v", node, addr, err)
	}
	ctx, cancel := context.WithTimeout(ctx, f.o.NodeTimeout)
	defer cancel()
	resp, err := apiv1.NewProbeletClient(conn).ListExplained(ctx,
		&apiv1.ListExplainedRequest{Namespace: namespace, PodNames: names, HistoryLimit: int32(f.o.HistoryLimit), OutputLimit: int32(f.o.OutputLimit)},
		grpc.PerRPCCredentials(bearer(token)), grpc.MaxCallRecvMsgSize(f.o.MaxAnswer))
	if err != nil {
		return f.failed(node, addr, err, src)
	}
	src.Answered = true
	return resp.GetContainers(), src
}

// failed says why a node's call failed, in the API's words.
func (f *Fetcher) failed(node, addr string, err error, src probes.Source) ([]*apiv1.WhyResponse, probes.Source) {
	st := status.Convert(err)
	switch st.Code() {
	case codes.DeadlineExceeded:
		src.Reason, src.Message = ReasonTimeout, fmt.Sprintf("probelet on node %s did not answer within %s", node, f.o.NodeTimeout)
	case codes.Unauthenticated, codes.PermissionDenied:
		src.Reason, src.Message = ReasonRefused, fmt.Sprintf("probelet on node %s refused the controller: %s", node, st.Message())
	case codes.ResourceExhausted:
		src.Reason, src.Message = ReasonFailed, fmt.Sprintf("probelet on node %s: %s (the answer is bounded to %d bytes)", node, st.Message(), f.o.MaxAnswer)
	default:
		// A certificate that is not the pin (a new probelet whose Lease
		// this replica has not seen yet) needs nothing here: conn dials
		// again once the Lease names the new one.
		src.Reason, src.Message = ReasonFailed, fmt.Sprintf("probelet on node %s at %s: %s", node, addr, st.Message())
	}
	return nil, src
}

// address is the endpoint's host, or the node's InternalIP, and its port.
func (f *Fetcher) address(node, endpoint string) (string, error) {
	host, port, err := net.SplitHostPort(endpoint)
	if err != nil {
		return "", fmt.Errorf("node %s's Lease names the state endpoint %q: %v", node, endpoint, err)
	}
	if host != "" {
		return endpoint, nil
	}
	n, err := f.o.Nodes.Get(node)
	if err != nil {
		return "", fmt.Errorf("node %s: %v", node, err)
	}
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return net.JoinHostPort(a.Address, port), nil
		}
	}
	return "", fmt.Errorf("node %s has no InternalIP to reach its probelet at", node)
}

// conn is the node's connection, made again when its address or pin
// changed (probelet restarted).
func (f *Fetcher) conn(node, addr, pin string) (*grpc.ClientConn, error) {
	key := addr + "|" + pin
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.conns[node]; ok {
		if f.pins[node] == key {
			return c, nil
		}
		c.Close()
		delete(f.conns, node)
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(selfsigned.Pinned(pin))),
		grpc.WithIdleTimeout(idleConn)}
	if f.o.Dial != nil {
		opts = append(opts, grpc.WithContextDialer(f.o.Dial))
	}
	c, err := grpc.NewClient("passthrough:///"+addr, opts...)
	if err != nil {
		return nil, err
	}
	f.conns[node], f.pins[node] = c, key
	return c, nil
}

func (f *Fetcher) readToken() (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.o.Clock.Now()
	if !f.token.read.IsZero() && now.Sub(f.token.read) < tokenReread && f.token.err == nil {
		return f.token.value, nil
	}
	b, err := os.ReadFile(f.o.TokenFile)
	f.token.value, f.token.read, f.token.err = strings.TrimSpace(string(b)), now, err
	if err == nil && f.token.value == "" {
		f.token.err = fmt.Errorf("%s is empty", f.o.TokenFile)
	}
	return f.token.value, f.token.err
}

func leaseEnd(renew *metav1.MicroTime, seconds *int32) (time.Time, bool) {
	if renew == nil || seconds == nil {
		return time.Time{}, false
	}
	return renew.Add(time.Duration(*seconds) * time.Second), true
}

func renewed(renew *metav1.MicroTime) string {
	if renew == nil {
		return "never"
	}
	return renew.UTC().Format(time.RFC3339)
}

// bearer is a token sent with each call; only over TLS.
type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}

func (bearer) RequireTransportSecurity() bool { return true }
