package prober

import (
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Event types and reasons, as the kubelet spells them.
const (
	eventNormal  = "Normal"
	eventWarning = "Warning"

	reasonUnhealthy    = "Unhealthy"
	reasonProbeWarning = "ProbeWarning"
	reasonKilling      = "Killing"
	// reasonWouldRestart is probelet's own: ActionReport's stand-in for Killing.
	reasonWouldRestart = "WouldRestart"
)

// emit publishes an event about w's container to subscribers and the debug log.
func (m *Manager) emit(w *worker, typ, reason, message string) {
	pod := &w.pod.pod
	m.events.publish(Event{
		Time: m.clock.Now(), Type: typ, Reason: reason, Message: message,
		PodUID: pod.UID, PodName: pod.Name, PodNamespace: pod.Namespace,
		ContainerName: w.name, ContainerID: w.containerID, ProbeType: w.typ,
	})
	if ce := m.log.Check(zapcore.DebugLevel, message); ce != nil {
		ce.Write(m.fields(w, zap.String("reason", reason), zap.String("type", typ))...)
	}
}
