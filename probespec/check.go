package probespec

import (
	"fmt"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// Checked is the outcome of Check for one pod.
type Checked struct {
	// Probes are the probes of the containers without problems.
	Probes PodProbes
	// Errors are every problem, grouped by container (annotation-wide ones
	// first).
	Errors ErrorList
	// Warnings are valid but doubtful choices, sorted.
	Warnings []string
}

// Check is the one policy for a pod's annotation, shared by the daemon,
// `probelet validate` and the API server input: parse it and, when the pod
// spec is known (a manifest, the API server), check it against the spec —
// every annotated container must exist and named ports resolve — check
// probe hosts (HostScope; here no pod IP is known) — and warn
// about probes the kubelet would run as well. Containers with problems are
// left out of Probes.
func Check(ref PodRef, annotation string, podSpec *corev1.PodSpec) Checked {
	probes, errs := Parse(ref, annotation)
	valid, errs := applyPolicy(ref, annotation, probes, errs, podSpec)
	valid, errs = reject(valid, append(errs, CheckHosts(ref, valid, offlineScope(podSpec))...))
	var warnings []string
	if podSpec != nil {
		warnings = NativeProbeWarnings(ref, probes, podSpec)
	}
	return Checked{Probes: valid, Errors: errs, Warnings: warnings}
}

// applyPolicy completes a parse (probes, errs) with the checks that need
// the pod spec, when it is known: the one policy of Check and
// Parsed.ForPod. It returns the probes of the containers without problems
// and every problem, grouped by container.
func applyPolicy(ref PodRef, annotation string, probes PodProbes, errs ErrorList, podSpec *corev1.PodSpec) (PodProbes, ErrorList) {
	errs = slices.Clone(errs)
	if podSpec != nil {
		errs = forbidInitProbes(ref, annotation, errs, podSpec)
		errs = append(errs, CheckPod(ref, probes, podSpec)...)
	}
	return reject(probes, errs)
}

// offlineScope is the host scope of a pod known only from its manifest:
// its IPs are not assigned yet, so a probe host is allowed only when the
// pod runs in the node's network. The namespace label and the daemon's
// CIDRs are not known here; a host they would allow is still reported,
// naming them.
func offlineScope(podSpec *corev1.PodSpec) HostScope {
	return HostScope{Offline: true, Any: podSpec != nil && podSpec.HostNetwork}
}

// NativeProbeWarnings flags containers that declare the same probe type in
// the pod spec too: the kubelet would run it as well, probing twice.
func NativeProbeWarnings(ref PodRef, probes PodProbes, ps *corev1.PodSpec) []string {
	var out []string
	for _, c := range slices.Concat(ps.InitContainers, ps.Containers) {
		cp, ok := probes[c.Name]
		if !ok {
			continue
		}
		native := NativeProbes(&c)
		for _, t := range Types {
			if cp.Get(t) != nil && native.Get(t) != nil {
				out = append(out, fmt.Sprintf("pod %s: container %q: %s is also set in the pod spec; the kubelet will run it too",
					ref, c.Name, FieldName(t)))
			}
		}
	}
	sort.Strings(out)
	return out
}
