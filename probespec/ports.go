package probespec

import (
	"encoding/json"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ResolvePort turns a probe's port into a number the way the kubelet does
// (pkg/probe ResolveContainerPort): a number is used as is; a name is looked
// up in the container's ports, given as the io.kubernetes.container.ports
// annotation the kubelet writes (`[{"name":"http","containerPort":8080,
// "protocol":"TCP"}]`; empty when the container declares none); a name
// that is not found but reads as a number is used as that number. The
// result must be in 1-65535.
func ResolvePort(port intstr.IntOrString, portsAnnotation string) (int, error) {
	var n int
	switch port.Type {
	case intstr.Int:
		n = int(port.IntVal)
	case intstr.String:
		var err error
		if n, err = portByName(port.StrVal, portsAnnotation); err != nil {
			// The kubelet's last resort: a number written as a string.
			num, aerr := strconv.Atoi(port.StrVal)
			if aerr != nil {
				return 0, err
			}
			n = num
		}
	default:
		return 0, fmt.Errorf("port %v has no type", port)
	}
	if n < 1 || n > 65535 {
		return 0, fmt.Errorf("invalid port number %d: must be between 1 and 65535", n)
	}
	return n, nil
}

// portByName finds the containerPort of the first port with that name,
// whatever its protocol, as the kubelet's findPortByName does.
func portByName(name, portsAnnotation string) (int, error) {
	ports, err := ParsePortsAnnotation(portsAnnotation)
	if err != nil {
		return 0, err
	}
	for _, p := range ports {
		if p.Name == name {
			return int(p.ContainerPort), nil
		}
	}
	if len(ports) == 0 {
		return 0, fmt.Errorf("port %q not found: the container declares no ports", name)
	}
	return 0, fmt.Errorf("port %q not found in the container's ports (%s)", name, portNames(ports))
}

// ParsePortsAnnotation reads the io.kubernetes.container.ports annotation;
// an empty value means no ports.
func ParsePortsAnnotation(value string) ([]corev1.ContainerPort, error) {
	if value == "" {
		return nil, nil
	}
	var ports []corev1.ContainerPort
	if err := json.Unmarshal([]byte(value), &ports); err != nil {
		return nil, fmt.Errorf("annotation %s is malformed: %v", AnnotationContainerPorts, err)
	}
	return ports, nil
}

// PortsAnnotation renders ports the way the kubelet writes the
// io.kubernetes.container.ports annotation; empty when there are none.
func PortsAnnotation(ports []corev1.ContainerPort) string {
	if len(ports) == 0 {
		return ""
	}
	data, err := json.Marshal(ports)
	if err != nil {
		return ""
	}
	return string(data)
}

func portNames(ports []corev1.ContainerPort) string {
	s := ""
	for i, p := range ports {
		if i > 0 {
			s += ", "
		}
		name := p.Name
		if name == "" {
			name = "<unnamed>"
		}
		s += fmt.Sprintf("%s=%d", name, p.ContainerPort)
	}
	return s
}
