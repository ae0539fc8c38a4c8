package prober

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/probelet/probelet/node"
)

// restartsAfterExit reports whether the kubelet keeps the workers of c, a
// container of pod that exited: the kubelet's worker goes on when the
// container will be restarted (willRestart) or when the whole pod is
// restarting (allContainersRestarting).
func restartsAfterExit(pod *node.Pod, c *node.Container) bool {
	return willRestart(pod.API, c) || allContainersRestarting(pod)
}

// willRestart reports whether the kubelet will restart container c after
// it exited — the kubelet's podutil.ContainerShouldRestart (v1.37, with
// ContainerRestartRules and RestartAllContainersOnContainerExits on by
// default): the container's restart rules in order (Restart and
// RestartAllContainers both restart it), then its own restartPolicy, then
// the pod's. Without the pod spec (probelet not watching the API server)
// the answer is yes: workers stay.
func willRestart(api *node.APIPod, c *node.Container) bool {
	if api == nil || api.Spec == nil {
		return true
	}
	if sc := api.SpecContainer(c.Name); sc != nil && sc.RestartPolicy != nil {
		if rule, ok := matchingRestartRule(sc, c.ExitCode); ok && restartsContainer(rule.Action) {
			return true
		}
		switch *sc.RestartPolicy {
		case corev1.ContainerRestartPolicyAlways:
			return true
		case corev1.ContainerRestartPolicyOnFailure:
			return c.ExitCode != 0
		case corev1.ContainerRestartPolicyNever:
			return false
		}
	}
	switch api.Spec.RestartPolicy {
	case corev1.RestartPolicyOnFailure:
		return c.ExitCode != 0
	case corev1.RestartPolicyNever:
		return false
	}
	return true // Always, or unset (the default)
}

// restartsContainer reports whether a restart rule's action restarts the
// container whose exit matched it.
func restartsContainer(a corev1.ContainerRestartRuleAction) bool {
	return a == corev1.ContainerRestartRuleActionRestart || a == corev1.ContainerRestartRuleActionRestartAllContainers
}

// allContainersRestarting is the kubelet's ShouldAllContainersRestart, as
// its probe worker asks it: the pod carries the AllContainersRestarting
// condition, or one of its containers (init containers included) exited
// with a code that matches one of its RestartAllContainers rules. The
// kubelet then restarts every container of the pod, so every worker stays.
// Without the pod spec there are no rules to match.
func allContainersRestarting(pod *node.Pod) bool {
	api := pod.API
	if api == nil || api.Spec == nil {
		return false
	}
	if api.AllContainersRestarting {
		return true
	}
	for _, list := range [][]corev1.Container{api.Spec.InitContainers, api.Spec.Containers} {
		for i := range list {
			c, ok := pod.Container(list[i].Name)
			if !ok || c.State != node.StateExited {
				continue
			}
			if rule, ok := matchingRestartRule(&list[i], c.ExitCode); ok && rule.Action == corev1.ContainerRestartRuleActionRestartAllContainers {
				return true
			}
		}
	}
	return false
}

// matchingRestartRule is the container's first restart rule whose exit
// codes match code.
func matchingRestartRule(c *corev1.Container, code int32) (corev1.ContainerRestartRule, bool) {
	for _, rule := range c.RestartPolicyRules {
		on := rule.ExitCodes
		if on == nil {
			continue
		}
		in := slices.Contains(on.Values, code)
		switch on.Operator {
		case corev1.ContainerRestartRuleOnExitCodesOpIn:
			if in {
				return rule, true
			}
		case corev1.ContainerRestartRuleOnExitCodesOpNotIn:
			if !in {
				return rule, true
			}
		}
	}
	return corev1.ContainerRestartRule{}, false
}
