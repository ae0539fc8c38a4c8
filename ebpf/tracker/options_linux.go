package tracker

import (
	"errors"
	"fmt"

	"go.uber.org/zap"
)

// Option configures a Tracker.
type Option func(*Tracker) error

// WithLogger sets the logger (default: none).
func WithLogger(l *zap.Logger) Option {
	return func(t *Tracker) error {
		if l == nil {
			return errors.New("tracker: nil logger")
		}
		t.log = l
		return nil
	}
}

// WithoutListenExitHook skips the sys_exit_listen tracepoint, leaving
// listen() without bind() to be completed from sock_diag (as when tracefs
// is not mounted). Tests use it to cover that path.
func WithoutListenExitHook() Option {
	return func(t *Tracker) error {
		t.noListenExit = true
		return nil
	}
}

// WithFeatures limits the optional kernel capabilities the tracker may use
// to f (default AllFeatures; each is still used only where the kernel has
// it). NoFeatures takes the paths of the oldest supported kernels, which
// tests use to cover them on any kernel.
func WithFeatures(f Features) Option {
	return func(t *Tracker) error {
		if f&^AllFeatures != 0 {
			return fmt.Errorf("tracker: unknown features %#x", uint8(f&^AllFeatures))
		}
		t.allowed = f
		return nil
	}
}
