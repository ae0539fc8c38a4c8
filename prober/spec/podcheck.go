package spec

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/probelet/probelet/prober/probe"
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
	c, path := findContainer(name, podSpec.Containers, field.NewPath("spec", "containers"))
	if c == nil {
		c, path = findContainer(name, podSpec.InitContainers, field.NewPath("spec", "initContainers"))
		if c == nil {
			return field.ErrorList{field.NotFound(field.NewPath("spec", "containers"), name)}
		}
		if c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
			return field.ErrorList{field.Forbidden(path,
				"probes may not be set for init containers without restartPolicy=Always")}
		}
	}
	ports := PortsAnnotation(c.Ports)
	var errs field.ErrorList
	for _, t := range probe.Types {
		errs = append(errs, checkPorts(cp.Get(t), field.NewPath(FieldName(t)), ports)...)
	}
	return errs
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

func findContainer(name string, cs []corev1.Container, path *field.Path) (*corev1.Container, *field.Path) {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i], path.Index(i)
		}
	}
	return nil, nil
}
