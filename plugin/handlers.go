package plugin

import (
	"context"
	"fmt"

	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"
	"go.uber.org/zap"

	"github.com/probelet/probelet/lifecycle"
	"github.com/probelet/probelet/node"
)

// handler receives the NRI events. Every method translates and hands over
// to the cache, then returns nil at once: an error from a plugin fails the
// pod or container operation, and nothing a user wrote may do that.
type handler struct{ p *Plugin }

var (
	_ stub.ConfigureInterface           = handler{}
	_ stub.SynchronizeInterface         = handler{}
	_ stub.ShutdownInterface            = handler{}
	_ stub.RunPodInterface              = handler{}
	_ stub.StopPodInterface             = handler{}
	_ stub.RemovePodInterface           = handler{}
	_ stub.PostCreateContainerInterface = handler{}
	_ stub.StartContainerInterface      = handler{}
	_ stub.PostStartContainerInterface  = handler{}
	_ stub.StopContainerInterface       = handler{}
	_ stub.RemoveContainerInterface     = handler{}
)

// Configure records who we talk to and hands the configuration text to
// the config handler; the event mask follows from the interfaces
// implemented. An invalid configuration is the operator's error and fails
// the registration, never a pod.
func (h handler) Configure(_ context.Context, config, runtime, version string) (api.EventMask, error) {
	h.p.setRuntime(runtime, version)
	if h.p.onConfig == nil {
		return 0, nil
	}
	if err := h.p.onConfig(config); err != nil {
		h.p.logger().Error("Invalid plugin configuration from the runtime", zap.Error(err))
		return 0, err
	}
	return 0, nil
}

// Synchronize reconciles the cache with the runtime's full state.
func (h handler) Synchronize(_ context.Context, pods []*api.PodSandbox, ctrs []*api.Container) ([]*api.ContainerUpdate, error) {
	defer h.guard("Synchronize")
	at := h.p.clock.Now()
	sbs := make([]lifecycle.Sandbox, 0, len(pods))
	for _, p := range pods {
		sbs = append(sbs, sandboxFrom(p))
	}
	cs := make([]lifecycle.Container, 0, len(ctrs))
	for _, c := range ctrs {
		cs = append(cs, containerFrom(c))
	}
	h.p.cache.Sync(at, sbs, cs)
	h.p.logger().Info("Synchronized with the runtime", zap.Int("pods", len(sbs)), zap.Int("containers", len(cs)))
	return nil, nil
}

// Shutdown is the runtime announcing it goes away; the connection drop
// that follows triggers the reconnect.
func (h handler) Shutdown(context.Context) {
	h.p.logger().Info("Runtime is shutting down")
}

// RunPodSandbox records a new pod. NRI carries no creation time; the
// event comes right after the sandbox and its network were set up, so its
// time stands in (a CRI reconcile knows better only for pods it adds).
func (h handler) RunPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	defer h.guard("RunPodSandbox")
	at := h.p.clock.Now()
	sb := sandboxFrom(pod)
	sb.CreatedAt = at
	h.p.cache.RunPod(at, sb)
	return nil
}

// StopPodSandbox marks a pod as being torn down.
func (h handler) StopPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	defer h.guard("StopPodSandbox")
	h.p.cache.StopPod(h.p.clock.Now(), sandboxFrom(pod))
	return nil
}

// RemovePodSandbox forgets a pod.
func (h handler) RemovePodSandbox(_ context.Context, pod *api.PodSandbox) error {
	defer h.guard("RemovePodSandbox")
	h.p.cache.RemovePod(h.p.clock.Now(), sandboxFrom(pod))
	return nil
}

// PostCreateContainer records a created container.
func (h handler) PostCreateContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	defer h.guard("PostCreateContainer")
	h.update(pod, containerFrom(ctr))
	return nil
}

// StartContainer records the container's pid; its process is not running
// yet, so the state stays as the runtime reports it.
func (h handler) StartContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	defer h.guard("StartContainer")
	h.update(pod, containerFrom(ctr))
	return nil
}

// PostStartContainer records a running container: its first probe can run.
func (h handler) PostStartContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) error {
	defer h.guard("PostStartContainer")
	c := containerFrom(ctr)
	if c.State == node.StateUnknown || c.State == node.StateCreated {
		c.State = node.StateRunning
	}
	h.update(pod, c)
	return nil
}

// StopContainer records an exited container (it fires on exit, whether or
// not someone asked for the stop).
func (h handler) StopContainer(_ context.Context, pod *api.PodSandbox, ctr *api.Container) ([]*api.ContainerUpdate, error) {
	defer h.guard("StopContainer")
	c := containerFrom(ctr)
	c.State = node.StateExited
	h.update(pod, c)
	return nil, nil
}

// RemoveContainer forgets a container.
func (h handler) RemoveContainer(_ context.Context, _ *api.PodSandbox, ctr *api.Container) error {
	defer h.guard("RemoveContainer")
	h.p.cache.RemoveContainer(h.p.clock.Now(), containerFrom(ctr))
	return nil
}

func (h handler) update(pod *api.PodSandbox, c lifecycle.Container) {
	h.p.cache.UpdateContainer(h.p.clock.Now(), sandboxFrom(pod), c)
}

// guard counts the event and turns a panic into a log line: a crash here
// would take every probe down and fail the runtime's operation.
func (h handler) guard(event string) {
	h.p.m.events.WithLabelValues(event).Inc()
	if r := recover(); r != nil {
		h.p.m.panics.Inc()
		h.p.logger().Error("NRI event handler panicked", zap.String("event", event),
			zap.String("panic", fmt.Sprint(r)), zap.Stack("stack"))
	}
}
