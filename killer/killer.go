// Package killer is the runtime end of a probe-failure kill, in the
// kubelet's stages: is the instance the engine decided on still running
// (the runtime, then the kernel), its preStop hook within the grace
// period, and then the stop with what is left of it. The engine (prober)
// and the kill guard hand it plain Kill values; it reports back
// prober.KillOutcome values. cri/client is its transport; exec hooks go
// through the exec probes' runner.
package killer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/prober/probe/execprobe"
	"github.com/probelet/probelet/prober/probe/httpprobe"
)

// MinGracePeriod is the shortest grace period the kubelet gives a
// container it kills (its minimumGracePeriodInSeconds).
const MinGracePeriod = 2 * time.Second

// Runtime is the CRI the killer asks and stops through (cri/client).
type Runtime interface {
	ContainerStatus(ctx context.Context, id string) (*runtimeapi.ContainerStatusResponse, error)
	StopContainer(ctx context.Context, id string, grace time.Duration) error
}

// runtimePider is a Runtime that knows the runtime's pid as this process
// sees it (cri/client: SO_PEERCRED of its connection).
type runtimePider interface{ RuntimePid() int32 }

// Killer stops containers through CRI StopContainer, with the grace
// period as its timeout; the kubelet then restarts them by the pod's
// restart policy.
type Killer struct {
	rt    Runtime
	procs procs
	log   *zap.Logger
	clock clock.Clock
	// exec and http run preStop hooks: the agent's exec runner (the
	// runtime, or the direct executor with the container's confinement)
	// and the kubelet's lifecycle client.
	exec execprobe.Runner
	http *http.Client
}

var _ prober.ContainerKiller = (*Killer)(nil)

// Option configures a Killer.
type Option func(*Killer) error

// WithProcRoot sets the proc filesystem process states are read from
// (default /proc; tests point it at a fake one).
func WithProcRoot(dir string) Option {
	return func(k *Killer) error {
		if dir == "" {
			return errors.New("killer: empty proc root")
		}
		k.procs = procs{root: dir}
		return nil
	}
}

// WithLogger sets the logger.
func WithLogger(l *zap.Logger) Option {
	return func(k *Killer) error {
		if l == nil {
			return errors.New("killer: nil logger")
		}
		k.log = l
		return nil
	}
}

// WithExecRunner sets what preStop exec hooks run through (the exec
// probes' runner); without one they fail.
func WithExecRunner(r execprobe.Runner) Option {
	return func(k *Killer) error {
		if r == nil {
			return errors.New("killer: nil exec runner")
		}
		k.exec = r
		return nil
	}
}

// WithClock sets the clock preStop hooks are timed on (tests: a fake one).
func WithClock(c clock.Clock) Option {
	return func(k *Killer) error {
		if c == nil {
			return errors.New("killer: nil clock")
		}
		k.clock = c
		return nil
	}
}

// IssuedKillDrain is how long an issued kill (its preStop hook and stop)
// goes on once its caller cancelled it: probelet shutting down.
const IssuedKillDrain = 5 * time.Second

// New returns a Killer over rt.
func New(rt Runtime, opts ...Option) (*Killer, error) {
	if rt == nil {
		return nil, errors.New("killer: nil runtime")
	}
	k := &Killer{rt: rt, procs: procs{root: "/proc"}, log: zap.NewNop(), clock: clock.RealClock{},
		http: httpprobe.LifecycleClient()}
	for _, o := range opts {
		if err := o(k); err != nil {
			return nil, err
		}
	}
	return k, nil
}

// KillContainer implements prober.ContainerKiller: KillNotRunning when the
// instance no longer runs, else KillIssued, the preStop hook (KillHookRan)
// within the grace period, the stop with what is left of it, and KillDone
// or KillFailed — the kubelet's killContainer.
func (k *Killer) KillContainer(ctx context.Context, kill prober.Kill, report chan<- prober.KillOutcome) {
	if err := k.Running(ctx, kill); err != nil {
		report <- prober.KillOutcome{Kind: prober.KillNotRunning, Err: err}
		return
	}
	report <- prober.KillOutcome{Kind: prober.KillIssued}
	// Issued, the kill is the runtime's to finish, as the Killing event
	// already said: probelet's own shutdown (an upgrade, a rollout) gives
	// it IssuedKillDrain before cancelling it — an upgrade's SIGTERM
	// cancelled a StopContainer milliseconds after it was sent, and the
	// kill was recorded as failed though the container stopped. Waiting
	// out a whole grace period would hold the shutdown (and every other
	// probe on the node) for as long.
	stopCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	defer context.AfterFunc(ctx, func() {
		drain := k.clock.NewTimer(IssuedKillDrain)
		defer drain.Stop()
		select {
		case <-drain.C():
			stop()
		case <-stopCtx.Done(): // the kill ended
		}
	})()
	ctx = stopCtx
	grace := max(kill.GracePeriod, MinGracePeriod)
	var outlived *runningHook
	if h := kill.PreStop; h != nil {
		k.log.Info("Running preStop hook", zap.String("containerID", kill.ContainerID), zap.Duration("gracePeriod", h.Grace))
		grace, outlived = k.waitHook(ctx, k.startHook(ctx, kill, h), h, report)
	}
	k.log.Info("Killing container with a grace period", zap.String("containerID", kill.ContainerID),
		zap.Duration("gracePeriod", grace), zap.String("reason", kill.Reason))
	err := k.rt.StopContainer(ctx, kill.ContainerID, grace)
	if outlived != nil {
		k.finishHook(outlived, report)
	}
	switch {
	case err == nil:
		report <- prober.KillOutcome{Kind: prober.KillDone}
	case status.Code(err) == codes.NotFound:
		// Removed between the check and the stop: it did not run on.
		k.log.Info("Container to kill is already gone", zap.String("containerID", kill.ContainerID))
		report <- prober.KillOutcome{Kind: prober.KillDone}
	default:
		report <- prober.KillOutcome{Kind: prober.KillFailed, Err: err}
	}
}

// witness is a process that outlives the container and shows, while it is
// visible, that this process sees the container's pids at all: the pod's
// sandbox process, else the runtime's own (CRI-O without an infra
// container has no sandbox process, and its NRI reports pid 0).
func (k *Killer) witness(kill prober.Kill) uint32 {
	if kill.SandboxPid != 0 {
		return kill.SandboxPid
	}
	if rp, ok := k.rt.(runtimePider); ok && rp.RuntimePid() > 0 {
		return uint32(rp.RuntimePid())
	}
	return 0
}

// Running is the first stage: the kubelet only kills a container that
// runs, and the engine decided on its own view, which the container's exit
// may not have reached yet. So the runtime is asked (ContainerStatus), and
// then, because containerd too reports RUNNING until it has processed the
// exit, the kernel: an init process that is exiting, a zombie, or gone
// while its sandbox process is visible has exited. An instance that exited
// or is gone gives an error wrapping node.ErrNotRunning. When neither can
// tell (a runtime error other than NotFound, pids not visible), the kill
// goes ahead: the engine saw it running, and the stop reports the
// runtime's trouble.
func (k *Killer) Running(ctx context.Context, kill prober.Kill) error {
	resp, err := k.rt.ContainerStatus(ctx, kill.ContainerID)
	switch {
	case status.Code(err) == codes.NotFound:
		return fmt.Errorf("%w: container %s is gone", node.ErrNotRunning, kill.ContainerID)
	case err != nil:
		k.log.Warn("Cannot ask the runtime whether the container to kill runs; killing it",
			zap.String("containerID", kill.ContainerID), zap.Error(err))
		return nil
	}
	if st := resp.GetStatus(); st.GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return fmt.Errorf("%w: container %s is %s (exit code %d)", node.ErrNotRunning, kill.ContainerID,
			st.GetState(), st.GetExitCode())
	}
	witness := k.witness(kill)
	if k.procs.exited(kill.Pid, witness) {
		return fmt.Errorf("%w: the init process (pid %d) of container %s is exiting or has exited; the runtime has not processed the exit yet",
			node.ErrNotRunning, kill.Pid, kill.ContainerID)
	}
	k.log.Debug("The container to kill runs", zap.String("containerID", kill.ContainerID),
		zap.Uint32("pid", kill.Pid), zap.Uint32("witnessPid", witness))
	return nil
}
