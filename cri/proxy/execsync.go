package proxy

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/probelet/probelet/internal/runtimestate"
	"github.com/probelet/probelet/prober/probe/execprobe"
)

const mExecSync = runtimeService + "ExecSync"

// ExecRunner runs a command in a container without the runtime, as CRI
// ExecSync does: the direct executor (directexec.Runner, whose helper is a
// process of its own). It must keep as much output as containerd does (16
// MiB of each stream), return an error wrapping execprobe.ErrTimeout for a
// command that outlived its timeout, and an error for anything it did not
// run exactly as the runtime would: such calls go to the runtime.
type ExecRunner interface {
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (stdout, stderr []byte, exitCode int32, err error)
	// Forget drops what it keeps about a container that stopped.
	Forget(containerID string)
}

// ErrForward is what an ExecRunner's own fallback returns to hand a call
// to the runtime (directexec.New's fallback, in the proxy).
var ErrForward = errors.New("proxy: the runtime answers this call")

// WithDirectExec serves the kubelet's ExecSync calls through r (exec
// probes, exec lifecycle hooks) and forwards to the runtime every call r
// does not answer.
func WithDirectExec(r ExecRunner) Option {
	return func(p *Proxy) error {
		if r == nil {
			return errors.New("proxy: nil exec runner")
		}
		p.exec = r
		return nil
	}
}

// serveExecSync answers ExecSync through the direct executor when it runs
// the command: its exit code and output, as bytes it does not look at, or
// containerd's DeadlineExceeded for a command that outlived its timeout.
// Everything else reaches containerd with the caller's bytes: a request
// that does not decode, no timeout (the executor needs one), a container
// it does not serve, a failure before the command started, a helper that
// crashed or hung. A call the caller gave up on ends with its context's
// status, as a forwarded one would.
func (p *Proxy) serveExecSync(ss grpc.ServerStream, method string) error {
	req := &frame{}
	if err := ss.RecvMsg(req); err != nil {
		return err
	}
	ctx := ss.Context()
	var r runtimeapi.ExecSyncRequest
	if err := proto.Unmarshal(req.data, &r); err == nil && r.Timeout > 0 && r.ContainerId != "" && len(r.Cmd) > 0 {
		timeout := time.Duration(r.Timeout) * time.Second
		stdout, stderr, code, err := p.exec.ExecSync(ctx, r.ContainerId, r.Cmd, timeout)
		switch {
		case err == nil:
			resp, err := proto.Marshal(&runtimeapi.ExecSyncResponse{Stdout: stdout, Stderr: stderr, ExitCode: code})
			if err != nil {
				return status.Errorf(codes.Internal, "encoding the ExecSync answer: %v", err)
			}
			p.m.calls.WithLabelValues(methodLabel(method), servedDirect).Inc()
			return ss.SendMsg(&frame{data: resp})
		case errors.Is(err, execprobe.ErrTimeout):
			p.m.calls.WithLabelValues(methodLabel(method), servedDirect).Inc()
			// containerd's answer, word for word (errgrpc maps its
			// context.DeadlineExceeded to the code the kubelet reads as
			// a timed-out probe).
			return status.Error(codes.DeadlineExceeded,
				fmt.Sprintf("failed to exec in container: timeout %v exceeded: %v", timeout, context.DeadlineExceeded))
		case ctx.Err() != nil:
			return status.FromContextError(ctx.Err()).Err()
		case !errors.Is(err, ErrForward):
			p.log.Debug("ExecSync goes to the runtime", zap.String("containerID", r.ContainerId), zap.Error(err))
		}
	}
	p.m.calls.WithLabelValues(methodLabel(method), servedRuntime).Inc()
	resp, header, trailer, err := p.invoke(outgoing(ctx), method, req.data)
	return answer(ss, resp, header, trailer, err)
}

// RuntimeStateDir asks containerd for its state directory, where the
// direct executor reads each container's OCI bundle.
func (p *Proxy) RuntimeStateDir(ctx context.Context) (string, error) {
	return runtimestate.Ask(ctx, p.rt)
}
