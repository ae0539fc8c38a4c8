package agent

import (
	"context"
	"fmt"
	"io"

	"github.com/probelet/probelet/cri/server"
	"github.com/probelet/probelet/ebpf"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/probe/tcpprobe"
)

// lateTCP stands in for the TCP prober while it loads. Loading the eBPF
// objects against the kernel's BTF and taking the listener snapshot take
// from a quarter of a second to well over one on a busy node, and the
// socket that crictl, probectl and the DaemonSet's checks read need not
// wait for them: Run serves it at once and starts the engine only once the
// prober is loaded, so no probe ever runs on the stand-in. Should one
// (a caller outside Run), ProbeTCPInstant declines and ProbeTCP waits.
type lateTCP struct {
	mode    string // --tcp-mode
	loaded  chan struct{}
	p       probe.TCPProber        // set before loaded closes; nil on error
	instant probe.InstantTCPProber // p, when it answers from memory
	starter probe.TCPStarter       // p, when it begins probes without blocking
	err     error
}

var (
	_ probe.InstantTCPProber = (*lateTCP)(nil)
	_ probe.TCPStarter       = (*lateTCP)(nil)
	_ io.Closer              = (*lateTCP)(nil)
)

// loadTCP starts building the prober for --tcp-mode mode. A nil prober
// from build means the kubelet-style dialer.
func loadTCP(mode string, build func() (probe.TCPProber, error)) *lateTCP {
	l := &lateTCP{mode: mode, loaded: make(chan struct{})}
	go func() {
		defer close(l.loaded)
		p, err := build()
		if err != nil {
			l.err = fmt.Errorf("--tcp-mode %s: %w", mode, err)
			return
		}
		if p == nil {
			p = tcpprobe.NewDialer()
		}
		l.p = p
		l.instant, _ = p.(probe.InstantTCPProber)
		l.starter, _ = p.(probe.TCPStarter)
	}()
	return l
}

// tcpStatuser is a prober that says how it answers (ebpf.TCPProber).
type tcpStatuser interface{ Status() ebpf.Status }

// status says how TCP probes are answered: Mode is "" while the prober
// loads, and for a prober that does not say (WithTCPProber's).
func (l *lateTCP) status() ebpf.Status {
	select {
	case <-l.loaded:
	default:
		return ebpf.Status{Requested: ebpf.Mode(l.mode)}
	}
	if s, ok := l.p.(tcpStatuser); ok {
		return s.Status()
	}
	return ebpf.Status{Requested: ebpf.Mode(l.mode)}
}

// socketStatus is status as the socket server reports it.
func (l *lateTCP) socketStatus() server.TCPStatus {
	st := l.status()
	return server.TCPStatus{Requested: string(st.Requested), Mode: string(st.Mode), Reason: st.Reason}
}

// leaseMode is status as the node Lease carries it.
func (l *lateTCP) leaseMode() (mode, reason string) {
	st := l.status()
	return string(st.Mode), st.Reason
}

// wait returns once the prober is loaded (its load error, if any), when
// ctx ends (ctx's error) or when a component fails first (that failure).
func (l *lateTCP) wait(ctx context.Context, failed <-chan error) error {
	select {
	case <-l.loaded:
		return l.err
	case err := <-failed:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *lateTCP) ProbeTCPInstant(t probe.TCPTarget) (probe.Result, string, probe.Method, bool) {
	select {
	case <-l.loaded:
	default:
		return "", "", "", false
	}
	if l.instant == nil {
		return "", "", "", false
	}
	return l.instant.ProbeTCPInstant(t)
}

// StartTCP is the loaded prober's, declined before it loaded.
func (l *lateTCP) StartTCP(t probe.TCPTarget) (probe.Result, string, probe.Method, probe.TCPPending, bool) {
	select {
	case <-l.loaded:
	default:
		return "", "", "", nil, false
	}
	if l.starter == nil {
		return "", "", "", nil, false
	}
	return l.starter.StartTCP(t)
}

func (l *lateTCP) ProbeTCP(ctx context.Context, t probe.TCPTarget) (probe.Result, string, probe.Method, error) {
	select {
	case <-l.loaded:
	case <-ctx.Done():
		return "", "", "", ctx.Err()
	}
	if l.err != nil {
		return "", "", "", l.err
	}
	return l.p.ProbeTCP(ctx, t)
}

// Close waits for the load to end and closes the prober it made.
func (l *lateTCP) Close() error {
	<-l.loaded
	if c, ok := l.p.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
