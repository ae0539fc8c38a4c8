package ebpf_test

import (
	"context"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

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

// metricValue returns the value of the series name{labels} in reg, or -1
// if it is absent.
func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if labels[lp.GetName()] != lp.GetValue() {
					continue next
				}
			}
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue()
			}
		}
	}
	return -1
}
