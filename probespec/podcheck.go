package probespec

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// CheckPod checks parsed probes against the pod spec they will run in, as
// `probelet validate` does for a manifest: every annotated container must
// be a container of the pod (or a restartable init container, the only
// init containers that may have probes), and every named port must
// resolve through that container's declared ports exactly as it will at
// run time (through the io.kubernetes.container.ports annotation).
func CheckPod(pod PodRef, probes PodProbes, podSpec *corev1.PodSpec) ErrorList {
	var errs ErrorList
	for _, name := range slices.Sorted(maps.Keys(probes)) {
		ferrs := checkContainer(probes[name], name, podSpec)
		errs = append(errs, wrap(pod, name, ferrs)...)
	}
	return errs
}

func checkContainer(cp ContainerProbes, name string, podSpec *corev1.PodSpec) field.ErrorList {
	if i, plain := PlainInitContainer(podSpec, name); plain {
		return ForbiddenInitProbes(i, cp)
	}
	c, errs := probedContainer(name, podSpec)
	if c == nil {
		return errs
	}
	ports := PortsAnnotation(c.Ports)
	for _, t := range Types {
		errs = append(errs, checkPorts(cp.Get(t), field.NewPath(FieldName(t)), ports)...)
	}
	return errs
}

// probedContainer finds the container named name: a container of the pod,
// or else an init container (the caller has ruled out plain ones); nil
// with the reason otherwise.
func probedContainer(name string, podSpec *corev1.PodSpec) (*corev1.Container, field.ErrorList) {
	byName := func(c corev1.Container) bool { return c.Name == name }
	if i := slices.IndexFunc(podSpec.Containers, byName); i >= 0 {
		return &podSpec.Containers[i], nil
	}
	if i := slices.IndexFunc(podSpec.InitContainers, byName); i >= 0 {
		return &podSpec.InitContainers[i], nil
	}
	return nil, field.ErrorList{field.NotFound(field.NewPath("spec", "containers"), name)}
}

// checkPorts resolves the named ports of a probe's httpGet or tcpSocket.
func checkPorts(p *corev1.Probe, path *field.Path, portsAnnotation string) field.ErrorList {
	if p == nil {
		return nil
	}
	var port *intstr.IntOrString
	switch {
	case p.HTTPGet != nil:
		port, path = &p.HTTPGet.Port, path.Child("httpGet", "port")
	case p.TCPSocket != nil:
		port, path = &p.TCPSocket.Port, path.Child("tcpSocket", "port")
	}
	if port == nil || port.Type != intstr.String {
		return nil
	}
	if _, err := ResolvePort(*port, portsAnnotation); err != nil {
		return field.ErrorList{field.Invalid(path, port.StrVal, err.Error())}
	}
	return nil
}
