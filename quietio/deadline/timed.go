package deadline

import (
	"context"
	"sync"
	"time"
)

// timed is a context that ends at its deadline (the wheel ends it), when
// its parent ends, or when released. Its children — the standard
// library's contexts and context.AfterFunc — are told through its
// AfterFunc method, which the context package uses instead of a goroutine
// per child for a parent that has one.
type timed struct {
	parent   context.Context
	deadline time.Time
	// index is t's place in the wheel's heap, -1 when not in it; the
	// wheel's lock guards it.
	index int

	mu    sync.Mutex
	done  chan struct{} // made on first Done, closed when err is set
	err   error
	funcs map[*func()]struct{}
	// stopParent releases the parent's AfterFunc.
	stopParent func() bool
}

var _ interface {
	context.Context
	AfterFunc(func()) func() bool
} = (*timed)(nil)

// closedDone is the Done of a timed context that ended before anyone
// asked for it.
var closedDone = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func newTimed(parent context.Context, d time.Time) *timed {
	t := &timed{parent: parent, deadline: d, index: -1}
	// A parent that has ended runs the func at once on a goroutine of its
	// own: the lock makes end wait until stopParent is set.
	t.mu.Lock()
	t.stopParent = context.AfterFunc(parent, func() { t.end(parent.Err()) })
	t.mu.Unlock()
	return t
}

func (t *timed) Deadline() (time.Time, bool) { return t.deadline, true }

func (t *timed) Value(key any) any { return t.parent.Value(key) }

func (t *timed) Done() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done == nil {
		if t.err != nil {
			return closedDone
		}
		t.done = make(chan struct{})
	}
	return t.done
}

func (t *timed) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

// AfterFunc calls f once t ends; stop unregisters f, reporting whether it
// did so before f was called. If t has ended already, f runs at once on a
// goroutine of its own, as context.AfterFunc runs it.
func (t *timed) AfterFunc(f func()) (stop func() bool) {
	t.mu.Lock()
	if t.err != nil {
		t.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	if t.funcs == nil {
		t.funcs = make(map[*func()]struct{})
	}
	key := &f
	t.funcs[key] = struct{}{}
	t.mu.Unlock()
	return func() bool {
		t.mu.Lock()
		defer t.mu.Unlock()
		_, ok := t.funcs[key]
		delete(t.funcs, key)
		return ok
	}
}

// end ends t with err unless it has ended, and calls what waits on it.
func (t *timed) end(err error) {
	t.mu.Lock()
	if t.err != nil {
		t.mu.Unlock()
		return
	}
	t.err = err
	if t.done != nil {
		close(t.done)
	}
	funcs, stopParent := t.funcs, t.stopParent
	t.funcs = nil
	t.mu.Unlock()
	stopParent()
	for f := range funcs {
		(*f)()
	}
}
