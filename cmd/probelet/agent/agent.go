package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.uber.org/zap"

	"github.com/probelet/probelet/cri/client"
	"github.com/probelet/probelet/cri/server"
	"github.com/probelet/probelet/directexec"
	"github.com/probelet/probelet/history"
	"github.com/probelet/probelet/internal/logging"
	"github.com/probelet/probelet/killer"
	"github.com/probelet/probelet/killguard"
	"github.com/probelet/probelet/lifecycle"
	"github.com/probelet/probelet/plugin"
	"github.com/probelet/probelet/podnet"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/probe/execprobe"
)

// SocketServer serves probelet's CRI-style socket until ctx ends;
// cri/server's Server fits.
type SocketServer interface {
	ListenAndServe(ctx context.Context, endpoint string) error
}

// SocketServerFunc builds the socket server over the engine's probe state,
// the cache's pods, the NRI plugin's connection and how TCP probes are
// answered; past are the probe events kept from before this run (the
// history file), oldest first.
type SocketServerFunc func(status prober.StatusSource, view lifecycle.View, nri server.NRIStatus, tcp func() server.TCPStatus, past []prober.Event, log *zap.Logger) (SocketServer, error)

// TCPProberFunc builds the TCP prober for a --tcp-mode. A nil prober
// leaves TCP probes to the engine's kubelet-style dialer. The prober lives
// until ctx ends; if it is an io.Closer it is also closed at shutdown.
type TCPProberFunc func(ctx context.Context, mode string, verify bool, log *zap.Logger, reg prometheus.Registerer) (probe.TCPProber, error)

// Agent is one probelet daemon. New checks the configuration; Run builds
// the components, serves until its context ends, and shuts down in order.
type Agent struct {
	cfg        Config
	log        *zap.Logger
	reg        *prometheus.Registry
	socket     SocketServerFunc
	tcp        TCPProberFunc
	engineOpts []prober.Option
	pluginOpts []plugin.Option
	launched   bool
	// ownLog is set when the agent made its logger (on logOut) and may
	// remake it for a configuration that arrives later.
	ownLog bool
	logOut io.Writer

	started chan struct{}
	mu      sync.Mutex
	parts   *parts
}

// parts are the components Run builds.
type parts struct {
	cri     *client.Client
	tcp     *lateTCP
	engine  *prober.Manager
	cache   *lifecycle.Cache
	plugin  *plugin.Plugin
	recon   *lifecycle.Reconciler
	metrics net.Listener
	socket  SocketServer
	stopper *killer.Killer     // the runtime end of kills
	guard   *killguard.Guard   // nil: --kill-guard off
	kube    *kubeParts         // nil: node-only
	history *history.Log       // nil: nothing survives a restart
	exec    execprobe.Runner   // what exec probes go through (--exec-mode)
	direct  *directexec.Runner // nil: --exec-mode runtime
	// pins pin pods' network namespaces for probes from them (nil, with
	// pinsErr, when they cannot be had).
	pins    *podnet.Pins
	pinsErr error
}

// Option configures an Agent.
type Option func(*Agent) error

// WithLogger sets the logger (default: made from the configuration, see
// WithLogOutput).
func WithLogger(l *zap.Logger) Option {
	return func(a *Agent) error {
		if l == nil {
			return errors.New("agent: nil logger")
		}
		a.log = l
		return nil
	}
}

// WithLogOutput has the agent make its logger from the configuration,
// writing to w (default: os.Stderr). A launched plugin's logger is remade
// when the runtime's configuration arrives.
func WithLogOutput(w io.Writer) Option {
	return func(a *Agent) error {
		if w == nil {
			return errors.New("agent: nil log output")
		}
		a.logOut = w
		return nil
	}
}

// WithRegistry sets the metrics registry (default: a new one with the Go
// and process collectors).
func WithRegistry(r *prometheus.Registry) Option {
	return func(a *Agent) error {
		if r == nil {
			return errors.New("agent: nil registry")
		}
		a.reg = r
		return nil
	}
}

// WithSocketServer replaces the server that serves the --listen socket
// (default: cri/server). A nil f leaves the socket unserved.
func WithSocketServer(f SocketServerFunc) Option {
	return func(a *Agent) error {
		a.socket = f
		return nil
	}
}

// WithTCPProber replaces how the TCP prober is chosen for --tcp-mode.
func WithTCPProber(f TCPProberFunc) Option {
	return func(a *Agent) error {
		if f == nil {
			return errors.New("agent: nil TCP prober func")
		}
		a.tcp = f
		return nil
	}
}

// WithEngineOptions adds options to the probe engine (tests: jitter, history).
func WithEngineOptions(opts ...prober.Option) Option {
	return func(a *Agent) error {
		a.engineOpts = append(a.engineOpts, opts...)
		return nil
	}
}

// WithPluginOptions adds options to the NRI plugin (tests: backoff).
func WithPluginOptions(opts ...plugin.Option) Option {
	return func(a *Agent) error {
		a.pluginOpts = append(a.pluginOpts, opts...)
		return nil
	}
}

// New checks cfg and returns an agent ready to Run.
func New(cfg Config, opts ...Option) (*Agent, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a := &Agent{cfg: cfg, tcp: defaultTCPProber, socket: defaultSocketServer, started: make(chan struct{})}
	for _, o := range opts {
		if err := o(a); err != nil {
			return nil, err
		}
	}
	if a.log == nil {
		if a.logOut == nil {
			a.logOut = os.Stderr
		}
		l, err := logging.New(a.logOut, cfg.LogFormat, cfg.LogLevel)
		if err != nil {
			return nil, err
		}
		a.log, a.ownLog = l, true
	}
	if a.reg == nil {
		a.reg = prometheus.NewRegistry()
		a.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	return a, nil
}

// Config returns the configuration the agent runs with (for a launched
// plugin, complete once Started).
func (a *Agent) Config() Config { return a.cfg }

// Logger returns the agent's logger.
func (a *Agent) Logger() *zap.Logger {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.log
}

// Registry returns the agent's metrics registry.
func (a *Agent) Registry() *prometheus.Registry { return a.reg }

// Started is closed once Run has built everything and is serving.
func (a *Agent) Started() <-chan struct{} { return a.started }

// MetricsAddr is the bound metrics address (useful with port 0); empty
// before Started or when the endpoint is off.
func (a *Agent) MetricsAddr() string {
	p := a.get()
	if p == nil || p.metrics == nil {
		return ""
	}
	return p.metrics.Addr().String()
}

// Engine returns the probe engine, nil before Started.
func (a *Agent) Engine() *prober.Manager {
	return getPart(a, func(p *parts) *prober.Manager { return p.engine })
}

// Cache returns the node cache, nil before Started.
func (a *Agent) Cache() *lifecycle.Cache {
	return getPart(a, func(p *parts) *lifecycle.Cache { return p.cache })
}

// Plugin returns the NRI plugin, nil before Started.
func (a *Agent) Plugin() *plugin.Plugin {
	return getPart(a, func(p *parts) *plugin.Plugin { return p.plugin })
}

// CRI returns the CRI client, nil before Started.
func (a *Agent) CRI() *client.Client {
	return getPart(a, func(p *parts) *client.Client { return p.cri })
}

func (a *Agent) get() *parts {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.parts
}

func getPart[T any](a *Agent, f func(*parts) *T) *T {
	if p := a.get(); p != nil {
		return f(p)
	}
	return nil
}

// errServe wraps a server that stopped on its own.
func errServe(what string, err error) error {
	return fmt.Errorf("%s stopped: %w", what, err)
}
