package tracker

import (
	"context"
	"errors"
	"fmt"
	"runtime"

	"github.com/cilium/ebpf"
)

// ErrClosed is returned by Sync once the tracker is closed.
var ErrClosed = errors.New("tracker: closed")

type waiter struct {
	seq  uint64
	done chan struct{}
}

// Sync returns once every listener change the kernel made before the call
// is in Table. It puts a marker into the ring buffer (the marker program,
// run through BPF_PROG_TEST_RUN) and waits for the read loop to reach it.
func (t *Tracker) Sync(ctx context.Context) error {
	w := t.enqueue()
	for {
		ret, err := t.objs.Marker.Run(&ebpf.RunOptions{Context: []uint64{w.seq}})
		if err != nil {
			t.cancel(w)
			return fmt.Errorf("tracker: sync marker: %w", err)
		}
		if ret == 0 {
			break
		}
		// The ring buffer is full: the read loop is behind; let it run.
		if err := ctx.Err(); err != nil {
			t.cancel(w)
			return err
		}
		runtime.Gosched()
	}
	select {
	case <-w.done:
		return nil
	case <-t.done:
		return ErrClosed
	case <-ctx.Done():
		t.cancel(w)
		return ctx.Err()
	}
}

func (t *Tracker) enqueue() waiter {
	t.syncMu.Lock()
	defer t.syncMu.Unlock()
	t.syncSeq++
	w := waiter{seq: t.syncSeq, done: make(chan struct{})}
	t.waiters = append(t.waiters, w)
	return w
}

func (t *Tracker) cancel(w waiter) {
	t.syncMu.Lock()
	defer t.syncMu.Unlock()
	for i, x := range t.waiters {
		if x.seq == w.seq {
			t.waiters = append(t.waiters[:i], t.waiters[i+1:]...)
			return
		}
	}
}

// release wakes the waiters up to marker seq: markers are read in order,
// so every earlier marker's events are applied too.
func (t *Tracker) release(seq uint64) {
	t.syncMu.Lock()
	defer t.syncMu.Unlock()
	kept := t.waiters[:0]
	for _, w := range t.waiters {
		if w.seq <= seq {
			close(w.done)
		} else {
			kept = append(kept, w)
		}
	}
	t.waiters = kept
}
