package tcpprobe_test

import (
	"context"
	"testing"
	"time"

	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/probe/tcpprobe"
)

// BenchmarkProbeTCP is one dial probe against a loopback listener: connect,
// SO_LINGER, close. Each iteration leaves a TIME_WAIT socket behind.
func BenchmarkProbeTCP(b *testing.B) {
	target := probe.TCPTarget{Host: "127.0.0.1", Port: openPort(b), Timeout: time.Second}
	d := tcpprobe.NewDialer()
	b.ReportAllocs()
	for b.Loop() {
		if res, out, _, err := d.ProbeTCP(context.Background(), target); res != probe.Success {
			b.Fatalf("ProbeTCP = (%s, %q, %v)", res, out, err)
		}
	}
}
