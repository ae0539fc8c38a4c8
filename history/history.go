// Package history keeps what a troubleshooter reads after the fact — the
// probe events (probectl events, crictl events) and the restarts probelet
// issued (probectl describe and why) — in a bounded file in probelet's state
// directory, so they survive a probelet restart. The file is rewritten
// atomically (a temporary file, fsync, rename), at most once per flush
// interval; a corrupt or foreign file is reported once, set aside, and
// probelet starts with an empty history.
package history

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"
	"k8s.io/utils/clock"

	"github.com/probelet/probelet/prober"
)

// FileName is the history file in the state directory.
const FileName = "history.json"

// format identifies the file; a file without it is foreign.
const format = "probelet.io/history/v1"

// Bounds: as many events as the socket keeps, and the restarts of the pods
// most recently restarted (a node runs at most a few hundred pods).
const (
	DefaultMaxEvents = 512
	DefaultMaxPods   = 1024
	flushInterval    = time.Second
	// subscription buffer for the engine's events
	eventBuffer = 1024
)

var _ prober.RestartHistory = (*Log)(nil)

// Log is the history, in memory and on disk. Safe for concurrent use.
type Log struct {
	path      string
	maxEvents int
	maxPods   int
	clock     clock.WithTicker
	log       *zap.Logger

	mu       sync.Mutex
	events   []prober.Event
	restarts map[string]podRestarts // by pod UID
	dirty    bool
}

// podRestarts is one pod's restarts by container, with when they last changed
// (the oldest pods go first when the bound is reached).
type podRestarts struct {
	Updated     time.Time                   `json:"updated"`
	ByContainer map[string][]prober.Restart `json:"byContainer"`
}

// file is the on-disk form.
type file struct {
	Format   string                 `json:"format"`
	Events   []prober.Event         `json:"events"`
	Restarts map[string]podRestarts `json:"restarts"`
}

// Option configures a Log.
type Option func(*Log)

// WithClock sets the clock of the flush interval.
func WithClock(c clock.WithTicker) Option { return func(l *Log) { l.clock = c } }

// WithLogger sets the logger.
func WithLogger(z *zap.Logger) Option { return func(l *Log) { l.log = z } }

// WithBounds sets how many events and pods' restarts are kept.
func WithBounds(events, pods int) Option {
	return func(l *Log) { l.maxEvents, l.maxPods = max(events, 1), max(pods, 1) }
}

// Open loads the history from dir, creating dir when missing. A file that
// cannot be read as a history is renamed aside (FileName.corrupt-<unix
// time>) and reported once; Open then returns an empty history. Only a
// directory that cannot be used at all is an error.
func Open(dir string, opts ...Option) (*Log, error) {
	l := &Log{path: filepath.Join(dir, FileName), maxEvents: DefaultMaxEvents, maxPods: DefaultMaxPods,
		clock: clock.RealClock{}, log: zap.NewNop(), restarts: map[string]podRestarts{}}
	for _, o := range opts {
		o(l)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	data, err := os.ReadFile(l.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return l, nil
	case err != nil:
		return nil, fmt.Errorf("state directory: %w", err)
	}
	var f file
	if err := json.Unmarshal(data, &f); err != nil || f.Format != format {
		why := "not a probelet history"
		if err != nil {
			why = err.Error()
		}
		l.setAside(why)
		return l, nil
	}
	l.events = f.Events
	if len(l.events) > l.maxEvents {
		l.events = l.events[len(l.events)-l.maxEvents:]
	}
	if f.Restarts != nil {
		l.restarts = f.Restarts
	}
	l.log.Info("History restored", zap.String("file", l.path), zap.Int("events", len(l.events)), zap.Int("pods", len(l.restarts)))
	return l, nil
}

// setAside renames an unreadable file so it is kept for inspection and
// never read again.
func (l *Log) setAside(why string) {
	aside := fmt.Sprintf("%s.corrupt-%d", l.path, l.clock.Now().Unix())
	if err := os.Rename(l.path, aside); err != nil {
		l.log.Warn("History file unreadable and cannot be set aside; starting with an empty history",
			zap.String("file", l.path), zap.String("problem", why), zap.Error(err))
		return
	}
	l.log.Warn("History file unreadable; set aside, starting with an empty history",
		zap.String("file", l.path), zap.String("problem", why), zap.String("setAside", aside))
}

// Events returns the kept events, oldest first.
func (l *Log) Events() []prober.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

// Restarts implements prober.RestartHistory.
func (l *Log) Restarts(podUID string) map[string][]prober.Restart {
	l.mu.Lock()
	defer l.mu.Unlock()
	pr, ok := l.restarts[podUID]
	if !ok {
		return nil
	}
	out := make(map[string][]prober.Restart, len(pr.ByContainer))
	for name, rs := range pr.ByContainer {
		out[name] = slices.Clone(rs)
	}
	return out
}

// Save implements prober.RestartHistory.
func (l *Log) Save(podUID string, byContainer map[string][]prober.Restart) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.restarts[podUID] = podRestarts{Updated: l.clock.Now(), ByContainer: byContainer}
	for len(l.restarts) > l.maxPods {
		oldest := ""
		for uid, pr := range l.restarts {
			if oldest == "" || pr.Updated.Before(l.restarts[oldest].Updated) {
				oldest = uid
			}
		}
		delete(l.restarts, oldest)
	}
	l.dirty = true
}

// add keeps ev.
func (l *Log) add(ev prober.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, ev)
	if len(l.events) > l.maxEvents {
		l.events = slices.Delete(l.events, 0, len(l.events)-l.maxEvents)
	}
	l.dirty = true
}

// Run keeps the engine's events and writes the file when something changed,
// at most once per flush interval, until ctx ends; then it writes once more.
func (l *Log) Run(ctx context.Context, status prober.StatusSource) error {
	evs, cancel := status.SubscribeEvents(eventBuffer)
	defer cancel()
	tick := l.clock.NewTicker(flushInterval)
	defer tick.Stop()
	defer l.flush()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-evs:
			if !ok {
				return nil
			}
			l.add(ev)
		case <-tick.C():
			l.flush()
		}
	}
}

// flush writes the file if something changed since the last write.
func (l *Log) flush() {
	l.mu.Lock()
	if !l.dirty {
		l.mu.Unlock()
		return
	}
	data, err := json.Marshal(file{Format: format, Events: l.events, Restarts: maps.Clone(l.restarts)})
	l.dirty = false
	l.mu.Unlock()
	if err == nil {
		err = writeAtomic(l.path, data)
	}
	if err != nil {
		l.log.Warn("Cannot write the history file", zap.String("file", l.path), zap.Error(err))
		l.mu.Lock()
		l.dirty = true // try again at the next flush
		l.mu.Unlock()
	}
}

// writeAtomic replaces path with data so a reader (or a crash) sees the old
// file or the new one, never a part.
func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op once renamed
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
