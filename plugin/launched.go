package plugin

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/containerd/nri/pkg/api"
)

// ErrConnectionClosed ends Run for a plugin the runtime launched: such a
// plugin cannot reconnect; the runtime launches it again when it restarts.
var ErrConnectionClosed = errors.New("plugin: the runtime that launched probelet closed the NRI connection")

// Launched reports whether the runtime started this process as a
// pre-installed NRI plugin: it then hands over a connected socket, the
// plugin's index and name in the environment, and the configuration in
// the Configure request.
func Launched() bool { return os.Getenv(api.PluginSocketEnvVar) != "" }

// adoptLaunchEnv takes the connection, index and name the runtime launched
// the plugin with, which the stub uses, so probelet's logs match.
func (p *Plugin) adoptLaunchEnv() {
	p.socket = "inherited fd " + os.Getenv(api.PluginSocketEnvVar)
	if v := os.Getenv(api.PluginIdxEnvVar); v != "" {
		p.index = v
	}
	if v := os.Getenv(api.PluginNameEnvVar); v != "" {
		p.name = v
	}
}

// WithConfigHandler has f receive the configuration text of the runtime's
// Configure request (a launched plugin's .conf file; empty otherwise). An
// error from f fails the registration.
func WithConfigHandler(f func(config string) error) Option {
	return func(p *Plugin) error {
		p.onConfig = f
		return nil
	}
}

// runLaunched registers over the socket the runtime passed and serves it
// until it closes (ErrConnectionClosed) or ctx is done (nil).
func (p *Plugin) runLaunched(ctx context.Context) error {
	st, closed, err := p.register(ctx)
	if err != nil && ctx.Err() != nil {
		return nil // stopped before the runtime configured the plugin
	}
	if err != nil {
		p.m.failures.Inc()
		return fmt.Errorf("plugin: register with the runtime that launched probelet: %w", err)
	}
	if p.serve(ctx, st, closed) {
		return nil
	}
	return ErrConnectionClosed
}
