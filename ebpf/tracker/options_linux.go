package tracker

import (
	"errors"

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
