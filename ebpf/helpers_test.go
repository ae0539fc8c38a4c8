package ebpf_test

import (
	"context"
	"sync"

	"github.com/probelet/probelet/prober/probe"
)

// fakeDialer stands in for the dial path and counts its calls.
type fakeDialer struct {
	mu    sync.Mutex
	calls int
	res   probe.Result
	out   string
}

func (f *fakeDialer) ProbeTCP(context.Context, probe.TCPTarget) (probe.Result, string, probe.Method, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return f.res, f.out, probe.MethodDial, nil
}

func (f *fakeDialer) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}
