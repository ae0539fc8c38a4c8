package prober

import (
	"context"
	"time"

	"github.com/probelet/probelet/podnet"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/probe/execprobe"
	"github.com/probelet/probelet/prober/probe/grpcprobe"
	"github.com/probelet/probelet/prober/probe/httpprobe"
	"github.com/probelet/probelet/prober/probe/tcpprobe"
)

// maxProbeRetries is how often a probe that errors is tried in one run
// before the run is discarded (the kubelet's maxProbeRetries).
const maxProbeRetries = 3

// handlers is the seam between the engine and the probe handlers; engine
// tests replace them with fakes.
type handlers struct {
	http func(ctx context.Context, t httpprobe.Target) (probe.Result, string, error)
	grpc func(ctx context.Context, host string, port int, service string, timeout time.Duration) (probe.Result, string, error)
	exec func(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (probe.Result, string, error)
	tcp  probe.TCPProber
}

// defaultHandlers are the real handlers; exec has no runner until
// WithExecRunner provides one, so it errors like a broken runtime would.
func defaultHandlers() handlers {
	return handlers{
		http: httpprobe.New().Probe,
		grpc: grpcprobe.Probe,
		exec: execHandler(nil),
		tcp:  tcpprobe.NewDialer(),
	}
}

// execHandler runs exec probes through r.
func execHandler(r execprobe.Runner) func(context.Context, string, []string, time.Duration) (probe.Result, string, error) {
	return func(ctx context.Context, id string, cmd []string, timeout time.Duration) (probe.Result, string, error) {
		return execprobe.Probe(ctx, r, id, cmd, timeout)
	}
}

// runWithRetries runs t, trying again while the handler errors, up to
// maxProbeRetries times; a cancelled ctx ends it at once.
func (h *handlers) runWithRetries(ctx context.Context, t *target) (res probe.Result, out string, method probe.Method, err error) {
	for range maxProbeRetries {
		res, out, method, err = h.run(ctx, t)
		if err == nil || ctx.Err() != nil {
			return res, out, method, err
		}
	}
	return res, out, method, err
}

// run picks t's handler and runs it once.
func (h *handlers) run(ctx context.Context, t *target) (probe.Result, string, probe.Method, error) {
	method := methodOf(t.kind)
	if t.err != nil {
		return probe.Unknown, "", method, t.err
	}
	if t.kind == kindTCP {
		tt, err := t.tcpFrom()
		if err != nil {
			return probe.Unknown, "", method, err
		}
		return h.tcp.ProbeTCP(ctx, tt)
	}
	var res probe.Result
	var out string
	var err error
	if t.origin != nil {
		ns, err := t.origin.namespace()
		if err != nil {
			return probe.Unknown, "", method, err
		}
		ctx = podnet.WithNamespace(ctx, ns)
	}
	switch t.kind {
	case kindHTTP:
		res, out, err = h.http(ctx, t.http)
	case kindGRPC:
		res, out, err = h.grpc(ctx, t.grpcHost, t.grpcPort, t.grpcService, t.timeout)
	case kindExec:
		res, out, err = h.exec(ctx, t.containerID, t.execCmd, t.timeout)
	}
	return res, out, method, err
}

// methodOf names how a handler kind answers; TCP probers name themselves.
func methodOf(k handlerKind) probe.Method {
	switch k {
	case kindHTTP:
		return probe.MethodHTTP
	case kindGRPC:
		return probe.MethodGRPC
	case kindExec:
		return probe.MethodExec
	case kindTCP:
		return probe.MethodDial
	}
	return ""
}
