package proxy

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	endpointpkg "github.com/probelet/probelet/internal/endpoint"
)

// maxRequestSize is above containerd's 16 MiB default, so the proxy never
// refuses a request the runtime may be set to accept. Replies are bounded
// by the kubelet's own limit, MaxReplySize: a larger one the kubelet would
// refuse, and the proxy refuses it the same way (ResourceExhausted) before
// holding it.
const maxRequestSize = 64 << 20

// Proxy forwards CRI calls to the runtime and serves the relist reads and
// the container event stream itself. New makes it; Serve runs it.
type Proxy struct {
	endpoint string
	conn     *grpc.ClientConn
	rt       runtimeapi.RuntimeServiceClient
	clock    clock.WithTicker
	log      *zap.Logger
	reg      prometheus.Registerer
	m        *metrics
	memo     *memo
	maxAge   time.Duration

	verify    bool
	settle    time.Duration
	forwardEv bool

	events *announcer
	verif  *verifier
	exec   ExecRunner
}

// Option configures a Proxy.
type Option func(*Proxy) error

// WithLogger sets the logger.
func WithLogger(l *zap.Logger) Option {
	return func(p *Proxy) error {
		if l == nil {
			return errors.New("proxy: nil logger")
		}
		p.log = l
		return nil
	}
}

// WithRegisterer registers the proxy's metrics with r.
func WithRegisterer(r prometheus.Registerer) Option {
	return func(p *Proxy) error {
		p.reg = r
		return nil
	}
}

// WithClock sets the clock for memo ages and event times.
func WithClock(c clock.WithTicker) Option {
	return func(p *Proxy) error {
		if c == nil {
			return errors.New("proxy: nil clock")
		}
		p.clock = c
		return nil
	}
}

// WithMaxAge bounds how long an answer is served without a change being
// heard of (DefaultMaxAge).
func WithMaxAge(d time.Duration) Option {
	return func(p *Proxy) error {
		if d <= 0 {
			return fmt.Errorf("proxy: max age %s must be positive", d)
		}
		p.maxAge = d
		return nil
	}
}

// WithVerify turns on shadow mode: cached answers are compared with the
// runtime's fresh answer to the same request, and a difference that the
// memo still holds settle later is counted and logged as a mismatch.
func WithVerify(settle time.Duration) Option {
	return func(p *Proxy) error {
		if settle <= 0 {
			return fmt.Errorf("proxy: verify settle time %s must be positive", settle)
		}
		p.verify, p.settle = true, settle
		return nil
	}
}

// WithForwardedEvents forwards GetContainerEvents to the runtime like any
// other call instead of serving probelet's own stream.
func WithForwardedEvents() Option {
	return func(p *Proxy) error {
		p.forwardEv = true
		return nil
	}
}

// New returns a proxy to the runtime at endpoint (unix:///path). It does
// not dial; calls do.
func New(endpoint string, opts ...Option) (*Proxy, error) {
	if _, err := endpointpkg.UnixPath(endpoint); err != nil {
		return nil, fmt.Errorf("proxy: runtime endpoint %w", err)
	}
	p := &Proxy{endpoint: endpoint, clock: clock.RealClock{}, log: zap.NewNop(), maxAge: DefaultMaxAge}
	for _, o := range opts {
		if err := o(p); err != nil {
			return nil, err
		}
	}
	p.m = newMetrics()
	if p.reg != nil {
		if err := p.m.register(p.reg); err != nil {
			return nil, err
		}
	}
	conn, err := endpointpkg.DialRuntime(endpoint, MaxReplySize, maxRequestSize)
	if err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	p.conn, p.rt = conn, runtimeapi.NewRuntimeServiceClient(conn)
	p.memo = newMemo(p.clock, p.maxAge)
	p.events = newAnnouncer(p)
	if p.verify {
		p.verif = newVerifier(p)
	}
	return p, nil
}

// Close releases the connection to the runtime.
func (p *Proxy) Close() error { return p.conn.Close() }
