// Package plugin is probelet's NRI plugin: it registers with the container
// runtime (containerd) through github.com/containerd/nri/pkg/stub, turns
// pod and container events into node-cache input, and keeps the
// registration alive across runtime restarts.
package plugin

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/containerd/nri/pkg/api"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"k8s.io/utils/clock"

	"github.com/probelet/probelet/lifecycle"
)

const (
	// DefaultSocketPath is containerd's default NRI socket.
	DefaultSocketPath = "/var/run/nri/nri.sock"
	// DefaultName is the name probelet registers under.
	DefaultName = "probelet"
	// DefaultIndex orders probelet among NRI plugins; it only observes,
	// so its place does not matter much.
	DefaultIndex = "10"
	// DefaultMinBackoff and DefaultMaxBackoff bound the wait between
	// registration attempts (each wait up to retry.Jitter longer); the cap
	// keeps reconnection within about a second of the runtime coming back.
	DefaultMinBackoff = 100 * time.Millisecond
	DefaultMaxBackoff = time.Second
	// DefaultRegistrationTimeout bounds one registration attempt, from
	// connecting to the runtime's Configure request: twice containerd's
	// own plugin registration timeout, so a slow runtime that would still
	// configure the plugin is not cut off first.
	DefaultRegistrationTimeout = 10 * time.Second
)

// Cache is what the plugin feeds; *lifecycle.Cache implements it.
type Cache interface {
	RunPod(at time.Time, sb lifecycle.Sandbox)
	StopPod(at time.Time, sb lifecycle.Sandbox)
	RemovePod(at time.Time, sb lifecycle.Sandbox)
	UpdateContainer(at time.Time, sb lifecycle.Sandbox, ct lifecycle.Container)
	RemoveContainer(at time.Time, ct lifecycle.Container)
	Sync(at time.Time, sbs []lifecycle.Sandbox, ctrs []lifecycle.Container)
}

var _ Cache = (*lifecycle.Cache)(nil)

// Plugin is the NRI plugin. Run registers it and keeps it registered.
type Plugin struct {
	cache      Cache
	socket     string
	name       string
	index      string
	minBackoff time.Duration
	maxBackoff time.Duration
	regTimeout time.Duration
	clock      clock.Clock
	log        atomic.Pointer[zap.Logger]
	reg        prometheus.Registerer
	m          *metrics

	launched bool
	onConfig func(config string) error

	connected atomic.Bool
	mu        sync.Mutex
	runtime   string
	version   string
}

// Option configures a Plugin.
type Option func(*Plugin) error

// WithSocketPath sets the runtime's NRI socket.
func WithSocketPath(path string) Option {
	return func(p *Plugin) error {
		if path == "" {
			return errors.New("plugin: empty NRI socket path")
		}
		p.socket = path
		return nil
	}
}

// WithIndex sets the two-digit plugin index ("00".."99").
func WithIndex(idx string) Option {
	return func(p *Plugin) error {
		if err := api.CheckPluginIndex(idx); err != nil {
			return fmt.Errorf("plugin: %w", err)
		}
		p.index = idx
		return nil
	}
}

// WithName sets the name the plugin registers under. A name the runtime
// would refuse ([a-zA-Z0-9_.+-]) is an error here: Run would otherwise
// retry the refused registration forever.
func WithName(name string) Option {
	return func(p *Plugin) error {
		if err := api.CheckPluginName(name); err != nil {
			return fmt.Errorf("plugin: %w", err)
		}
		p.name = name
		return nil
	}
}

// WithBackoff bounds the capped exponential wait between registration
// attempts (each wait up to retry.Jitter longer).
func WithBackoff(minWait, maxWait time.Duration) Option {
	return func(p *Plugin) error {
		if minWait <= 0 || maxWait < minWait {
			return fmt.Errorf("plugin: bad backoff bounds %s..%s", minWait, maxWait)
		}
		p.minBackoff, p.maxBackoff = minWait, maxWait
		return nil
	}
}

// WithRegistrationTimeout bounds one registration attempt, from connecting
// to the runtime's Configure request. A runtime that registers the plugin
// and then never configures it (it died in between) is hung up on, and the
// plugin registers again.
func WithRegistrationTimeout(d time.Duration) Option {
	return func(p *Plugin) error {
		if d <= 0 {
			return fmt.Errorf("plugin: registration timeout %s is not positive", d)
		}
		p.regTimeout = d
		return nil
	}
}

// WithClock sets the clock for event times, backoff waits and the
// registration timeout.
func WithClock(c clock.Clock) Option {
	return func(p *Plugin) error {
		if c == nil {
			return errors.New("plugin: nil clock")
		}
		p.clock = c
		return nil
	}
}

// WithLogger sets the logger (the NRI stub's own messages go to it too).
func WithLogger(l *zap.Logger) Option {
	return func(p *Plugin) error {
		if l == nil {
			return errors.New("plugin: nil logger")
		}
		p.log.Store(l)
		return nil
	}
}

// WithRegisterer registers the plugin's metrics with r.
func WithRegisterer(r prometheus.Registerer) Option {
	return func(p *Plugin) error {
		p.reg = r
		return nil
	}
}

// New returns a plugin that feeds cache. It does not connect: call Run.
// When the runtime launched the process (see Launched), the socket, index
// and name options give way to what the runtime passed.
func New(cache Cache, opts ...Option) (*Plugin, error) {
	if cache == nil {
		return nil, errors.New("plugin: nil cache")
	}
	p := &Plugin{
		cache:      cache,
		socket:     DefaultSocketPath,
		name:       DefaultName,
		index:      DefaultIndex,
		minBackoff: DefaultMinBackoff,
		maxBackoff: DefaultMaxBackoff,
		regTimeout: DefaultRegistrationTimeout,
		clock:      clock.RealClock{},
		m:          newMetrics(),
		launched:   Launched(),
	}
	p.log.Store(zap.NewNop())
	for _, o := range opts {
		if err := o(p); err != nil {
			return nil, err
		}
	}
	if p.launched {
		p.adoptLaunchEnv()
	}
	if p.reg != nil {
		if err := p.m.register(p.reg); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// SetLogger replaces the logger, the NRI stub's messages included: a
// launched plugin starts with a logger made before the runtime's
// configuration said how to log, and takes the configured one from its
// config handler.
func (p *Plugin) SetLogger(l *zap.Logger) {
	if l != nil {
		p.log.Store(l)
	}
}

func (p *Plugin) logger() *zap.Logger { return p.log.Load() }

// Connected reports whether the plugin is registered with the runtime.
func (p *Plugin) Connected() bool { return p.connected.Load() }

// Runtime returns the runtime's name and version from the last
// registration (empty before the first).
func (p *Plugin) Runtime() (name, version string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.runtime, p.version
}

func (p *Plugin) setRuntime(name, version string) {
	p.mu.Lock()
	p.runtime, p.version = name, version
	p.mu.Unlock()
}

func (p *Plugin) setConnected(c bool) {
	p.connected.Store(c)
	v := 0.0
	if c {
		v = 1
	}
	p.m.connected.Set(v)
}
