// Package readiness keeps the probelet.io/ready condition of this node's
// pods that list it as a readiness gate equal to the probe engine's
// verdict: every container with a probelet readiness probe started and
// ready, the kubelet's own per-container rule. It writes pods/status only
// on change, never blocks probing, and catches up after the API server
// was away.
package readiness

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/probelet/probelet/node"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/prober/explain"
	"github.com/probelet/probelet/probespec"
)

// The condition's messages when True (its type and reasons are probespec's).
const (
	messageNoProbes = "no container has a probelet readiness probe"
	messageAllReady = "every container with a probelet readiness probe is started and ready"
)

// verdict is the condition a pod should have.
type verdict struct {
	status          corev1.ConditionStatus
	reason, message string
}

// holder is one container that keeps the pod from being ready.
type holder struct {
	name, reason, why string
}

// decide computes the condition for pod from its annotation (parsed) and
// the engine's state of its containers. undecided is true while what a
// previous probelet wrote must stand: a running container that started
// before this agent (since) and has not been probed by it yet, or one the
// kubelet reports running (apiRunning, by name) that probelet does not
// know yet (it has not synchronized with the runtime). The condition then
// stays as it is, so restarting probelet never flaps a pod's readiness.
func decide(parsed *probespec.Parsed, sts []prober.ContainerStatus, apiRunning map[string]bool, since time.Time) (v verdict, undecided bool) {
	byName := make(map[string]*prober.ContainerStatus, len(sts))
	for i := range sts {
		byName[sts[i].ContainerName] = &sts[i]
	}
	var held []holder
	for _, name := range readinessProbed(parsed) {
		st := byName[name]
		switch {
		case parsed.Probes[name].Readiness == nil:
			held = append(held, holder{name, probespec.ReasonProbeSpecRejected, "its probes were rejected: " + parsed.ErrorFor(name)})
		case st == nil && apiRunning[name]:
			return verdict{}, true
		case st == nil:
			held = append(held, holder{name, probespec.ReasonContainerNotCreated, "the container has not been created yet"})
		case pending(st, since):
			return verdict{}, true
		default:
			if h, ok := holds(st); ok {
				held = append(held, h)
			}
		}
	}
	switch {
	case len(held) > 0:
		return falseVerdict(held), false
	case len(readinessProbed(parsed)) == 0:
		return verdict{status: corev1.ConditionTrue, message: messageNoProbes}, false
	}
	return verdict{status: corev1.ConditionTrue, message: messageAllReady}, false
}

// readinessProbed lists, sorted, the containers the annotation gives a
// readiness probe, including those whose probes were rejected (they meant
// to have one).
func readinessProbed(parsed *probespec.Parsed) []string {
	var out []string
	for name, cp := range parsed.Probes {
		if cp.Readiness != nil {
			out = append(out, name)
		}
	}
	for name := range parsed.Errors {
		if name != probespec.PodWide {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// pending reports whether a running container that started before this
// agent (since) has had no startup or readiness probe run by this agent.
// The engine publishes the kubelet's initial "not ready" as soon as a
// worker follows a container: right for a container that has just
// started, wrong to write over what the previous instance found. A start
// time the runtime did not give counts as before.
func pending(st *prober.ContainerStatus, since time.Time) bool {
	if st.State != node.StateRunning || st.StartedAt.After(since) {
		return false
	}
	for _, t := range []probespec.Type{probespec.Startup, probespec.Readiness} {
		if ps, ok := st.Probes[t]; ok && (ps.Unpublished || ps.LastProbeTime.IsZero()) {
			return true
		}
	}
	return false
}

// holds says why st keeps the pod from being ready, if it does, in the
// words probectl why uses.
func holds(st *prober.ContainerStatus) (holder, bool) {
	if st.Started && st.Ready {
		return holder{}, false
	}
	reason := probespec.ReasonReadinessProbeFailed
	switch {
	case st.State != node.StateRunning:
		reason = probespec.ReasonContainerNotRunning
	case !st.Started:
		reason = probespec.ReasonStartupNotSucceeded
	}
	xs := explain.Container(explain.Subject{Container: node.Container{ID: st.ContainerID, Name: st.ContainerName, State: st.State}, Status: st})
	why := "not ready"
	if len(xs) > 0 {
		why = xs[0].Text
	}
	return holder{st.ContainerName, reason, why}, true
}

func falseVerdict(held []holder) verdict {
	first := held[0]
	msg := fmt.Sprintf("container %s: %s", first.name, first.why)
	if len(held) > 1 {
		var others []string
		for _, h := range held[1:] {
			others = append(others, h.name)
		}
		msg += fmt.Sprintf(" (also not ready: %s)", strings.Join(others, ", "))
	}
	return verdict{status: corev1.ConditionFalse, reason: first.reason, message: msg}
}

// runningInAPI names the pod's containers the kubelet reports running.
func runningInAPI(pod *corev1.Pod) map[string]bool {
	out := map[string]bool{}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Running != nil {
			out[cs.Name] = true
		}
	}
	return out
}

// current is the pod's condition, if it has one.
func current(pod *corev1.Pod) (corev1.PodCondition, bool) {
	for _, c := range pod.Status.Conditions {
		if c.Type == probespec.ConditionReady {
			return c, true
		}
	}
	return corev1.PodCondition{}, false
}

// hasGate reports whether the pod lists the readiness gate.
func hasGate(pod *corev1.Pod) bool {
	for _, g := range pod.Spec.ReadinessGates {
		if g.ConditionType == probespec.ConditionReady {
			return true
		}
	}
	return false
}

// condition is v as written at lastTransition, as the API server keeps it
// (RFC 3339, whole seconds).
func (v verdict) condition(lastTransition metav1.Time) corev1.PodCondition {
	return corev1.PodCondition{Type: probespec.ConditionReady, Status: v.status, Reason: v.reason, Message: v.message,
		LastTransitionTime: lastTransition.Rfc3339Copy()}
}

// matches reports whether c already says v.
func (v verdict) matches(c corev1.PodCondition) bool {
	return c.Status == v.status && c.Reason == v.reason && c.Message == v.message
}
