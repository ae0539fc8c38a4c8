package main

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

// runner lets the benchmark use the test bed and kubelet helpers
// (internal/testbed, internal/cluster), which take a testing.TB: it logs
// to stderr, turns Fatal into a panic that main recovers, and runs the
// cleanups in reverse order at the end. Only the methods those helpers
// call are implemented; the embedded nil TB satisfies the interface.
type runner struct {
	testing.TB
	mu       sync.Mutex
	cleanups []func()
	failed   bool
}

// fatal is the panic value of Fatal.
type fatal struct{ msg string }

func (r *runner) Helper()      {}
func (r *runner) Name() string { return "criproxy-bench" }

func (r *runner) Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
}

func (r *runner) Errorf(format string, args ...any) {
	r.setFailed()
	r.Logf("error: "+format, args...)
}

func (r *runner) Error(args ...any) { r.Errorf("%s", fmt.Sprint(args...)) }

func (r *runner) Fatalf(format string, args ...any) {
	r.setFailed()
	panic(fatal{fmt.Sprintf(format, args...)})
}

func (r *runner) Fatal(args ...any) { r.Fatalf("%s", fmt.Sprint(args...)) }

func (r *runner) Skipf(format string, args ...any) { r.Fatalf("skipped: "+format, args...) }

func (r *runner) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

func (r *runner) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

func (r *runner) setFailed() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = true
}

// cleanup runs the registered cleanups, newest first.
func (r *runner) cleanup() {
	r.mu.Lock()
	fs := r.cleanups
	r.cleanups = nil
	r.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}
