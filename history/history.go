// Package history keeps what a troubleshooter reads after the fact — the
// probe events (probectl events, crictl events) and the restarts probelet
// issued (probectl describe and why) — in a bounded file in probelet's state
// directory, so they survive a probelet restart.
//
// The file is a journal of JSON lines: a snapshot of the whole history,
// then one line per event or pod's restarts kept since, appended at most
// once per flush interval. Once as many lines were appended as events are
// kept, the file is compacted: the current history is rewritten as a new
// snapshot, atomically (a temporary file, fsync, rename). A node with
// failing probes thus writes each event once and the whole history once
// per bound's worth of events, not every second. A line torn by a crash
// ends the file and is dropped; any other unreadable or foreign file is
// reported once, set aside, and probelet starts with an empty history.
package history

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
	"k8s.io/utils/clock"

	"github.com/probelet/probelet/internal/atomicfile"
	"github.com/probelet/probelet/prober"
)

// FileName is the history file in the state directory.
const FileName = "history.json"

// format identifies the file by its first line; a file without it is
// foreign. v1 files (a snapshot line alone) are read and compacted into v2.
const (
	format   = "probelet.io/history/v2"
	formatV1 = "probelet.io/history/v1"
)

// formatFamily is what every version's name starts with.
var formatFamily = strings.TrimSuffix(formatV1, "v1")

// newerFormatError is a history in a format of a later probelet.
type newerFormatError struct{ format string }

func (e newerFormatError) Error() string {
	return fmt.Sprintf("written by a newer probelet (%s; this one reads %s and %s)", e.format, format, formatV1)
}

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
	pending  bytes.Buffer           // lines not yet appended
	appended int                    // lines in the file after its snapshot, and pending
	compact  bool                   // the next flush rewrites the file

	file *os.File // the journal, open for appending; only flush uses it
}

// podRestarts is one pod's restarts by container, with when they last changed
// (the oldest pods go first when the bound is reached).
type podRestarts struct {
	Updated     time.Time                   `json:"updated"`
	ByContainer map[string][]prober.Restart `json:"byContainer"`
}

// snapshot is the file's first line: the whole history at compaction.
type snapshot struct {
	Format   string                 `json:"format"`
	Events   []prober.Event         `json:"events"`
	Restarts map[string]podRestarts `json:"restarts"`
}

// line is one journal line after the snapshot: an event, or a pod's
// restarts as they now are.
type line struct {
	Event    *prober.Event `json:"event,omitempty"`
	Restarts *podLine      `json:"restarts,omitempty"`
}

type podLine struct {
	Pod string `json:"pod"`
	podRestarts
}

// Option configures a Log.
type Option func(*Log) error

// WithClock sets the clock of the flush interval.
func WithClock(c clock.WithTicker) Option {
	return func(l *Log) error {
		if c == nil {
			return errors.New("history: nil clock")
		}
		l.clock = c
		return nil
	}
}

// WithLogger sets the logger.
func WithLogger(z *zap.Logger) Option {
	return func(l *Log) error {
		if z == nil {
			return errors.New("history: nil logger")
		}
		l.log = z
		return nil
	}
}

// WithBounds sets how many events and pods' restarts are kept (at least
// one of each).
func WithBounds(events, pods int) Option {
	return func(l *Log) error {
		if events < 1 || pods < 1 {
			return fmt.Errorf("history: bounds %d events, %d pods: both must be at least 1", events, pods)
		}
		l.maxEvents, l.maxPods = events, pods
		return nil
	}
}

// Open loads the history from dir, creating dir when missing. A file that
// cannot be read as a history is renamed aside (FileName.corrupt-<unix
// time>, or .newer-<unix time> when a later release's format) and
// reported once; Open then returns an empty history. Only a
// directory that cannot be used at all is an error.
func Open(dir string, opts ...Option) (*Log, error) {
	l := &Log{path: filepath.Join(dir, FileName), maxEvents: DefaultMaxEvents, maxPods: DefaultMaxPods,
		clock: clock.RealClock{}, log: zap.NewNop(), restarts: map[string]podRestarts{}}
	for _, o := range opts {
		if err := o(l); err != nil {
			return nil, err
		}
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
	if err := l.load(data); err != nil {
		l.events, l.restarts, l.appended = nil, map[string]podRestarts{}, 0
		l.setAside(err)
		return l, nil
	}
	l.log.Info("History restored", zap.String("file", l.path), zap.Int("events", len(l.events)), zap.Int("pods", len(l.restarts)))
	return l, nil
}

// load reads the snapshot and replays the journal through the same bounds.
func (l *Log) load(data []byte) error {
	lines := bytes.Split(data, []byte("\n"))
	// Without a final newline the last line may have been torn by a crash
	// during an append: the journal ends before it unless it reads whole.
	torn := lines[len(lines)-1]
	lines = lines[:len(lines)-1]
	var snap snapshot
	if len(lines) == 0 {
		lines, torn = [][]byte{torn}, nil // a v1 file: one line, no newline
	}
	if err := json.Unmarshal(lines[0], &snap); err != nil {
		return err
	}
	switch snap.Format {
	case format:
	case formatV1:
		l.compact = true // v2 from the first flush on
	default:
		if strings.HasPrefix(snap.Format, formatFamily) {
			// A rollback from a release that changed the format: the
			// file is kept whole for that release, never half read.
			return newerFormatError{snap.Format}
		}
		return errors.New("not a probelet history")
	}
	for _, ev := range snap.Events {
		l.keepEvent(ev)
	}
	for uid, pr := range snap.Restarts {
		l.keepRestarts(uid, pr)
	}
	for i, data := range lines[1:] {
		if err := l.replay(data); err != nil {
			return fmt.Errorf("line %d: %w", i+2, err)
		}
	}
	if len(torn) > 0 && l.replay(torn) != nil {
		l.log.Info("History file ends in a line torn by a crash; dropped it", zap.String("file", l.path), zap.Int("line", len(lines)+1))
		l.compact = true
	}
	return nil
}

// replay applies one journal line.
func (l *Log) replay(data []byte) error {
	var ln line
	if err := json.Unmarshal(data, &ln); err != nil {
		return err
	}
	switch {
	case ln.Event != nil:
		l.keepEvent(*ln.Event)
	case ln.Restarts != nil:
		l.keepRestarts(ln.Restarts.Pod, ln.Restarts.podRestarts)
	default:
		return errors.New("neither an event nor restarts")
	}
	l.appended++
	return nil
}

// setAside renames an unreadable file so it is kept for inspection (or,
// newer, for the release that wrote it: FileName.newer-<unix time>) and
// never read again.
func (l *Log) setAside(problem error) {
	why, kind := problem.Error(), "corrupt"
	if errors.As(problem, new(newerFormatError)) {
		kind = "newer"
	}
	aside := fmt.Sprintf("%s.%s-%d", l.path, kind, l.clock.Now().Unix())
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
	pr := podRestarts{Updated: l.clock.Now(), ByContainer: byContainer}
	l.keepRestarts(podUID, pr)
	l.journal(line{Restarts: &podLine{Pod: podUID, podRestarts: pr}})
}

// add keeps ev.
func (l *Log) add(ev prober.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.keepEvent(ev)
	l.journal(line{Event: &ev})
}

// keepEvent and keepRestarts hold the bounds, the same way when adding
// and when replaying the journal.
func (l *Log) keepEvent(ev prober.Event) {
	l.events = append(l.events, ev)
	if len(l.events) > l.maxEvents {
		l.events = slices.Delete(l.events, 0, len(l.events)-l.maxEvents)
	}
}

func (l *Log) keepRestarts(podUID string, pr podRestarts) {
	l.restarts[podUID] = pr
	for len(l.restarts) > l.maxPods {
		oldest := ""
		for uid, pr := range l.restarts {
			if oldest == "" || pr.Updated.Before(l.restarts[oldest].Updated) {
				oldest = uid
			}
		}
		delete(l.restarts, oldest)
	}
}

// journal queues ln for the next flush.
func (l *Log) journal(ln line) {
	data, err := json.Marshal(ln)
	if err != nil { // not for these types; the next snapshot holds it anyway
		l.compact = true
		return
	}
	l.pending.Write(data)
	l.pending.WriteByte('\n')
	l.appended++
}

// Run keeps the engine's events and writes the file when something changed,
// at most once per flush interval, until ctx ends; then it writes once more.
func (l *Log) Run(ctx context.Context, status prober.StatusSource) error {
	evs, cancel := status.SubscribeEvents(eventBuffer)
	defer cancel()
	tick := l.clock.NewTicker(flushInterval)
	defer tick.Stop()
	defer l.closeFile()
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

// flush appends the pending lines to the journal; or, when as many lines
// were appended as events are kept (or the journal is not open yet, or a
// write failed), rewrites the file as a snapshot of the whole history.
// Appends are not synced: they survive probelet's crash, not the node's.
func (l *Log) flush() {
	l.mu.Lock()
	if l.pending.Len() == 0 && !l.compact {
		l.mu.Unlock()
		return
	}
	if l.compact || l.file == nil || l.appended > l.maxEvents {
		data, err := json.Marshal(snapshot{Format: format, Events: l.events, Restarts: l.restarts})
		l.pending.Reset()
		l.appended, l.compact = 0, false
		l.mu.Unlock()
		if err == nil {
			err = l.rewrite(append(data, '\n'))
		}
		l.failed(err)
		return
	}
	data := bytes.Clone(l.pending.Bytes())
	l.pending.Reset()
	l.mu.Unlock()
	_, err := l.file.Write(data)
	l.failed(err)
}

// failed reports a write that failed; the next flush rewrites the file,
// whose snapshot then holds what was lost.
func (l *Log) failed(err error) {
	if err == nil {
		return
	}
	l.log.Warn("Cannot write the history file", zap.String("file", l.path), zap.Error(err))
	l.mu.Lock()
	l.compact = true
	l.mu.Unlock()
}

// rewrite replaces the file with data and opens it for appending.
func (l *Log) rewrite(data []byte) error {
	l.closeFile()
	if err := atomicfile.WriteFile(l.path, data, 0o600); err != nil {
		return err
	}
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	l.file = f
	return nil
}

func (l *Log) closeFile() {
	if l.file != nil {
		l.file.Close()
		l.file = nil
	}
}
