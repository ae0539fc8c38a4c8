package prober

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/probelet/probelet/node"
)

// willRestart reports whether the kubelet will restart container c after
// it exited — the kubelet's podutil.ContainerShouldRestart (v1.37, with
// ContainerRestartRules on by default): the container's restart rules in
// order, then its own restartPolicy, then the pod's. Without the pod spec
// (probelet not watching the API server) the answer is yes: workers stay.
func willRestart(api *node.APIPod, c *node.Container) bool {
	if api == nil || api.Spec == nil {
		return true
	}
	if sc := api.SpecContainer(c.Name); sc != nil && sc.RestartPolicy != nil {
		if rule, ok := matchingRestartRule(sc, c.ExitCode); ok && rule.Action == corev1.ContainerRestartRuleActionRestart {
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
