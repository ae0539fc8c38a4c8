package tracker

import (
	"context"
	"errors"
	"os"
	"runtime"
	"testing"

	"github.com/probelet/probelet/ebpf/ebpftest"
	"github.com/probelet/probelet/internal/testutil"
)

// TestEveryStartupFailureIsCleanedUp fails each start-up step in turn, after
// the earlier ones succeeded: New must return that error, not panic, and
// leave no goroutine, file descriptor or kernel object behind; Close on
// what a failed start left is safe.
func TestEveryStartupFailureIsCleanedUp(t *testing.T) {
	ebpftest.RequireRoot(t)
	names := stepNames()
	if len(names) < 6 {
		t.Fatalf("steps = %v", names)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			fds, goroutines := openFDs(t), runtime.NumGoroutine()
			injected := errors.New("injected failure at " + name)
			tr, err := New(context.Background(), withFault(name, injected))
			if !errors.Is(err, injected) || tr != nil {
				t.Fatalf("New = (%v, %v), want (nil, %v)", tr, err, injected)
			}
			testutil.WaitFor(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= goroutines })
			if got := openFDs(t); got != fds {
				t.Errorf("%d file descriptors open after the failed start, %d before", got, fds)
			}
		})
	}
}

// TestCloseOfAHalfStartedTracker closes a tracker the way New does after a
// failed step, twice.
func TestCloseOfAHalfStartedTracker(t *testing.T) {
	for _, tr := range []*Tracker{{done: make(chan struct{})}, {}} {
		if err := tr.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := tr.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	}
}

func stepNames() []string {
	var names []string
	for _, s := range (&Tracker{}).steps(context.Background()) {
		names = append(names, s.name)
	}
	return names
}

// withFault fails start-up step name with err.
func withFault(name string, err error) Option {
	return func(t *Tracker) error {
		t.fault = func(step string) error {
			if step == name {
				return err
			}
			return nil
		}
		return nil
	}
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}
