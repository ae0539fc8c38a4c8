package prober_test

import (
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/probespec"
)

func TestLogsUseTheKubeletsMessages(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	h := newHarness(t, prober.WithLogger(zap.New(core)))
	h.tcp.always(livePort, failure)
	h.update(testPod("c1", probespec.ContainerProbes{Liveness: tcpProbe(livePort, withThresholds(1, 1))}))
	want := []struct {
		msg    string
		fields map[string]any
	}{
		{"Probe failed", map[string]any{"probeType": "Liveness", "pod": "default/web", "containerName": "app", "output": "connection refused"}},
		{"Liveness probe failed: connection refused", map[string]any{"reason": "Unhealthy", "containerID": "c1"}},
		{"Container app failed liveness probe, will be restarted", map[string]any{"reason": "Killing", "podUID": "uid-1"}},
	}
	entries := logs.All()
	if len(entries) != len(want) {
		t.Fatalf("logged %d entries, want %d: %+v", len(entries), len(want), entries)
	}
	for i, w := range want {
		e := entries[i]
		if e.Message != w.msg {
			t.Errorf("entry %d = %q, want %q", i, e.Message, w.msg)
		}
		ctx := e.ContextMap()
		for k, v := range w.fields {
			if ctx[k] != v {
				t.Errorf("entry %q: %s = %v, want %v", e.Message, k, ctx[k], v)
			}
		}
	}
}
