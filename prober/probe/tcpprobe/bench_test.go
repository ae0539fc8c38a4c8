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

// BenchmarkStartTCP is the same probe begun as the engine's scheduling
// goroutine begins it: raw system calls, answered within the connect.
func BenchmarkStartTCP(b *testing.B) {
	target := probe.TCPTarget{Host: "127.0.0.1", Port: openPort(b), Timeout: time.Second}
	d := tcpprobe.NewDialer()
	b.ReportAllocs()
	for b.Loop() {
		res, out, _, pending, ok := d.StartTCP(target)
		if !ok {
			res, out, _, _ = pending.Finish(context.Background())
		}
		if res != probe.Success {
			b.Fatalf("StartTCP = (%s, %q)", res, out)
		}
	}
}
