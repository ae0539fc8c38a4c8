package execprobe_test

import (
	"context"
	"testing"
	"time"

	"github.com/probelet/probelet/prober/probe/execprobe"
)

// BenchmarkProbeHugeOutput is the probe's own cost (no real exec) for a
// command that printed 1 MiB: only the capped 10 KiB is copied.
func BenchmarkProbeHugeOutput(b *testing.B) {
	r := &fakeRunner{stdout: big, stderr: big, code: 1}
	b.ReportAllocs()
	for b.Loop() {
		_, _, _ = execprobe.Probe(context.Background(), r, "c0ffee", cmd, time.Second)
	}
}
