package prober

import (
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/probespec"
)

// errTCPSocketHook is the kubelet's answer to a tcpSocket lifecycle
// handler: accepted by the API for compatibility, never run.
var errTCPSocketHook = errors.New("invalid handler: tcpSocket is not supported as a lifecycle handler")

// preStopHook resolves container c's preStop hook for a kill whose grace
// (before the kubelet's 2 s floor) is grace: nil when there is none or no
// time for one (the kubelet runs it only when grace > 0). An unreadable
// hook annotation is logged and no hook runs, as in the kubelet. An
// httpGet hook connects from where the pod's probes do (origin.go); a pod
// origin that cannot be had fails the hook, as an unreachable target
// would, and the kill goes on.
func (m *Manager) preStopHook(pe *podEntry, c *node.Container, grace time.Duration) *Hook {
	pod := &pe.pod
	h, err := probespec.PreStop(pod, c)
	if err != nil {
		m.log.Warn("Unreadable preStop hook, killing without it", zap.String("pod", pod.Namespace+"/"+pod.Name),
			zap.String("containerName", c.Name), zap.Error(err))
		return nil
	}
	if h == nil || grace <= 0 {
		return nil
	}
	hook := &Hook{Grace: grace}
	switch {
	case h.Exec != nil:
		hook.Kind, hook.Command = HookExec, h.Exec.Command
	case h.HTTPGet != nil:
		hook.Kind = HookHTTP
		a := h.HTTPGet
		hook.HTTP.Scheme, hook.HTTP.Path, hook.HTTP.Headers = a.Scheme, a.Path, a.HTTPHeaders
		hook.HTTP.Host, hook.HTTP.Port, hook.Err = endpoint(a.Host, a.Port, pod, c, m.hostScope(pod))
		if hook.Err == nil {
			hook.origin, _, hook.Err = m.originFor(pe)
		}
	case h.Sleep != nil:
		hook.Kind, hook.Sleep = HookSleep, time.Duration(h.Sleep.Seconds)*time.Second
	default:
		hook.Err = errTCPSocketHook
	}
	return hook
}
