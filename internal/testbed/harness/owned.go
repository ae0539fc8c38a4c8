package harness

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	// maxBaseLen keeps directories short: unix socket paths under them are
	// limited to 108 bytes, and up.sh and kubelet.sh refuse long ones.
	maxBaseLen  = 40
	downTimeout = 2 * time.Minute
)

// Kind is one kind of directory the scripts start things in: a test bed,
// a control plane, a kubelet.
type Kind struct {
	// Noun names one in messages, e.g. "test bed".
	Noun string
	// Prefix starts the directory's name; gc.sh looks for BASE/PREFIX*.
	Prefix string
	// Marker is the file that marks the directory for the scripts.
	Marker string
	// Down is the script, and its arguments before the directory, that
	// tears one down, e.g. {"down.sh"} or {"kubelet.sh", "down"}.
	Down []string
	// Logs are what a failed test shows of it.
	Logs []Log
	// KeepHint, if set, tells how to use a kept one, e.g. "export
	// KUBECONFIG=...".
	KeepHint func(dir string) string
}

// Log is a log file under the directory and how many of its last lines a
// failed test shows.
type Log struct {
	File  string
	Lines int
}

// Owned is one directory a test started something in, and its teardown.
// Its methods are safe for concurrent use.
type Owned struct {
	t       testing.TB
	scripts Scripts
	kind    Kind
	dir     string

	mu      sync.Mutex
	stopped bool
}

// Claim gives a test a fresh directory of kind: it removes abandoned ones
// first, makes BASE/PREFIX* under a short temp base, registers the teardown
// with t.Cleanup and marks the directory as this process's. The teardown is
// registered before anything starts in it, so a half-started one comes
// down too; Owned is returned, with any error, once the directory exists.
func Claim(t testing.TB, s Scripts, kind Kind) (*Owned, error) {
	base := shortTempBase()
	if err := s.RemoveAbandoned(base); err != nil {
		t.Logf("%s: removing abandoned %ss: %v", s.Name, kind.Noun, err)
	}
	dir, err := os.MkdirTemp(base, kind.Prefix)
	if err != nil {
		return nil, err
	}
	o := &Owned{t: t, scripts: s, kind: kind, dir: dir}
	t.Cleanup(o.cleanup)
	return o, MarkOwned(dir, kind.Marker)
}

// RemoveAbandoned runs gc.sh, which tears down the directories under base
// whose owner is gone.
func (s Scripts) RemoveAbandoned(base string) error {
	_, err := s.Run(downTimeout, "gc.sh", base)
	return err
}

// shortTempBase is os.TempDir unless that is too long for socket paths.
func shortTempBase() string {
	if d := os.TempDir(); len(d) <= maxBaseLen {
		return d
	}
	return "/tmp"
}

// Dir is the directory, "" on a nil Owned (nothing was claimed).
func (o *Owned) Dir() string {
	if o == nil {
		return ""
	}
	return o.dir
}

// Stop tears the directory down with Kind.Down, once: later calls, and
// calls on a nil Owned, return nil.
func (o *Owned) Stop() error {
	if o == nil {
		return nil
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.stopped {
		return nil
	}
	args := slices.Concat(o.kind.Down[1:], []string{o.dir})
	if _, err := o.scripts.Run(downTimeout, o.kind.Down[0], args...); err != nil {
		return err
	}
	o.stopped = true
	return nil
}

func (o *Owned) isStopped() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.stopped
}

// cleanup is the t.Cleanup hook: after a failure it shows the logs and,
// with PROBELET_TESTBED_KEEP=1, keeps the directory; otherwise it tears
// the directory down.
func (o *Owned) cleanup() {
	if o.t.Failed() && !o.isStopped() {
		for _, l := range o.kind.Logs {
			path := filepath.Join(o.dir, l.File)
			o.t.Logf("%s: last lines of %s:\n%s", o.scripts.Name, path, FileTail(path, l.Lines))
		}
		if keepOnFailure() {
			o.keep()
			return
		}
	}
	if err := o.Stop(); err != nil {
		o.t.Errorf("%s: %v", o.scripts.Name, err)
	}
}

// keep leaves the directory for inspection, out of gc.sh's reach, and
// says how to remove it.
func (o *Owned) keep() {
	disown(o.dir)
	hint := ""
	if o.kind.KeepHint != nil {
		hint = "; " + o.kind.KeepHint(o.dir)
	}
	down := slices.Concat([]string{filepath.Join(o.scripts.Dir, o.kind.Down[0])}, o.kind.Down[1:], []string{o.dir})
	o.t.Logf("%s: keeping %s %s%s; remove it with %s", o.scripts.Name, o.kind.Noun, o.dir, hint, strings.Join(down, " "))
}
