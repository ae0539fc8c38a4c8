package server

import (
	"errors"
	"fmt"
	"time"

	"github.com/probelet/probelet/prober"
	"go.uber.org/zap"
	"k8s.io/utils/clock"
)

// Option configures a Server.
type Option func(*Server) error

// WithVersion sets the build version reported by Version calls.
func WithVersion(v string) Option {
	return func(s *Server) error {
		if v == "" {
			return errors.New("server: empty version")
		}
		s.version = v
		return nil
	}
}

// WithLogger sets the logger; the default discards everything.
func WithLogger(l *zap.Logger) Option {
	return func(s *Server) error {
		if l == nil {
			return errors.New("server: nil logger")
		}
		s.log = l
		return nil
	}
}

// WithSocketGroup sets the group that owns the socket (mode 0660), so
// members of that group can use probectl without root. Default: gid 0.
func WithSocketGroup(gid int) Option {
	return func(s *Server) error {
		if gid < 0 {
			return fmt.Errorf("server: invalid socket group %d", gid)
		}
		s.socketGID = gid
		return nil
	}
}

// WithStreamQueue sets how many messages a stream may have queued for a
// slow client before the client is disconnected. Default 1024.
func WithStreamQueue(n int) Option {
	return func(s *Server) error {
		if n < 1 {
			return fmt.Errorf("server: stream queue must be at least 1, got %d", n)
		}
		s.streamQueue = n
		return nil
	}
}

// WithEventHistory sets how many probe events are retained for the Events
// call and GetContainer. Default 512.
func WithEventHistory(n int) Option {
	return func(s *Server) error {
		if n < 1 {
			return fmt.Errorf("server: event history must be at least 1, got %d", n)
		}
		s.eventHistory = n
		return nil
	}
}

// WithShutdownTimeout bounds how long Stop waits for in-flight calls
// before closing connections. Default 5s.
func WithShutdownTimeout(d time.Duration) Option {
	return func(s *Server) error {
		if d <= 0 {
			return fmt.Errorf("server: shutdown timeout must be positive, got %s", d)
		}
		s.shutdownTimeout = d
		return nil
	}
}

// WithClock sets the clock used for the shutdown timeout.
func WithClock(c clock.Clock) Option {
	return func(s *Server) error {
		if c == nil {
			return errors.New("server: nil clock")
		}
		s.clock = c
		return nil
	}
}

// WithNRIStatus sets what says whether the NRI plugin is registered with
// the runtime (the NRIConnected condition, Version's nriConnected); without
// it the server reports it never connected.
func WithNRIStatus(n NRIStatus) Option {
	return func(s *Server) error {
		if n == nil {
			return errors.New("server: nil NRI status")
		}
		s.nri = n
		return nil
	}
}

// WithPastEvents seeds the event log with events from before this server
// started (probelet's history file), oldest first.
func WithPastEvents(evs []prober.Event) Option {
	return func(s *Server) error {
		s.pastEvents = evs
		return nil
	}
}
