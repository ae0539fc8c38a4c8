package tcpprobe_test

import (
	"context"
	"testing"
	"time"

	"github.com/probelet/probelet/internal/testutil"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/probe/tcpprobe"
	"github.com/probelet/probelet/quietio"
)

// Under --io=std no dial begins on the scheduling goroutine: StartTCP
// declines, and ProbeTCP dials through net on a runner.
func TestStdIODeclinesStartTCP(t *testing.T) {
	target := probe.TCPTarget{Host: "127.0.0.1", Port: 1, Timeout: time.Second}
	d := tcpprobe.NewDialer()
	testutil.EachIOMode(t, func(mode string) {
		_, _, _, pending, ok := d.StartTCP(target)
		if pending != nil {
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // releases the dial at once
			_, _, _, _ = pending.Finish(ctx)
		}
		if begun := ok || pending != nil; begun != (mode == quietio.Quiet) {
			t.Errorf("--io=%s: StartTCP began a dial: %v", mode, begun)
		}
	})
}
