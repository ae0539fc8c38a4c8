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
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/probelet/probelet/directexec"
	"github.com/probelet/probelet/internal/runtimestate"
	"github.com/probelet/probelet/prober/probe/execprobe"
)

const mExecSync = runtimeService + "ExecSync"

// ExecRunner runs a command in a container without the runtime, as CRI
// ExecSync does: the direct executor (directexec.Runner, whose helper is a
// process of its own). It must keep as much output as containerd does (16
// MiB of each stream) but no reply past MaxReplySize
// (*directexec.OutputTooLargeError), return an error wrapping
// execprobe.ErrTimeout for a command that outlived its timeout, and an
// error for anything it did not run exactly as the runtime would: such
// calls go to the runtime. The proxy releases each Output once its reply
// is sent.
type ExecRunner interface {
	Exec(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (*directexec.Output, error)
	// Forget drops what it keeps about a container that stopped.
	Forget(containerID string)
}

// ErrForward is what an ExecRunner's own fallback returns to hand a call
// to the runtime (directexec.New's fallback, in the proxy).
var ErrForward = errors.New("proxy: the runtime answers this call")

// WithDirectExec serves the kubelet's exec probes' ExecSync calls through
// r and forwards to the runtime every call r does not answer. Exec
// lifecycle hooks come without a timeout, which r needs: they go to the
// runtime (once per container, they cost little there).
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
		out, err := p.exec.Exec(ctx, r.ContainerId, r.Cmd, timeout)
		var large *directexec.OutputTooLargeError
		switch {
		case err == nil:
			defer out.Release()
			p.m.calls.WithLabelValues(methodLabel(method), servedDirect).Inc()
			if n := sizeExecSync(len(out.Stdout), len(out.Stderr), out.ExitCode); n > MaxReplySize {
				return tooLarge(n)
			}
			return ss.SendMsg(encodeExecSync(out.Stdout, out.Stderr, out.ExitCode))
		case errors.As(err, &large):
			// What containerd answers when its reply is past its gRPC
			// limit (and the kubelet would refuse it if it were not).
			p.m.calls.WithLabelValues(methodLabel(method), servedDirect).Inc()
			return tooLarge(sizeExecSync(large.Stdout, large.Stderr, large.ExitCode))
		case errors.Is(err, directexec.ErrOutputBudget):
			p.m.calls.WithLabelValues(methodLabel(method), servedDirect).Inc()
			return status.Error(codes.ResourceExhausted, err.Error())
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

// MaxReplySize is the largest reply the kubelet reads (its CRI client's
// limit, and containerd's default for what it sends).
const MaxReplySize = 16 << 20

// tooLarge is the runtime's answer to a reply of n bytes: its gRPC server
// refuses to send it.
func tooLarge(n int) error {
	return status.Errorf(codes.ResourceExhausted, "grpc: trying to send message larger than max (%d vs. %d)", n, MaxReplySize)
}

// encodeExecSync is ExecSyncResponse's encoding, byte for byte what
// proto.Marshal writes, in parts that point at the output instead of
// copying it into one buffer.
func encodeExecSync(stdout, stderr []byte, code int32) *frame {
	f := &frame{}
	for _, field := range []struct {
		num protowire.Number
		b   []byte
	}{{1, stdout}, {2, stderr}} {
		if len(field.b) > 0 {
			head := protowire.AppendVarint(protowire.AppendTag(nil, field.num, protowire.BytesType), uint64(len(field.b)))
			f.parts = append(f.parts, head, field.b)
		}
	}
	if code != 0 {
		f.parts = append(f.parts, protowire.AppendVarint(protowire.AppendTag(nil, 3, protowire.VarintType), uint64(int64(code))))
	}
	return f
}

// sizeExecSync is the size of the encoding of an ExecSyncResponse whose
// streams are stdout and stderr bytes long.
func sizeExecSync(stdout, stderr int, code int32) int {
	n := 0
	for i, l := range []int{stdout, stderr} {
		if l > 0 {
			n += protowire.SizeTag(protowire.Number(i+1)) + protowire.SizeBytes(l)
		}
	}
	if code != 0 {
		n += protowire.SizeTag(3) + protowire.SizeVarint(uint64(int64(code)))
	}
	return n
}
