package probespec

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate checks a container's defaulted probes with the apiserver's rules
// (pkg/apis/core/validation: validateLivenessProbe, validateReadinessProbe,
// validateStartupProbe), in that order. Paths start at the probe's field
// name, e.g. livenessProbe.periodSeconds.
func Validate(cp ContainerProbes) field.ErrorList {
	var errs field.ErrorList
	for _, t := range Types {
		errs = append(errs, ValidateProbe(t, cp.Get(t))...)
	}
	return errs
}

// ValidateProbe checks one defaulted probe of the given type; nil is valid.
func ValidateProbe(t Type, p *corev1.Probe) field.ErrorList {
	if p == nil {
		return nil
	}
	path := field.NewPath(FieldName(t))
	errs := validateCommon(p, path)
	switch t {
	case Liveness, Startup:
		// Only one success can end a failure streak that restarts the container.
		if p.SuccessThreshold != 1 {
			errs = append(errs, field.Invalid(path.Child("successThreshold"), p.SuccessThreshold, "must be 1"))
		}
	case Readiness:
		// A readiness failure never kills, so a kill grace period means nothing.
		if p.TerminationGracePeriodSeconds != nil {
			errs = append(errs, field.Invalid(path.Child("terminationGracePeriodSeconds"),
				p.TerminationGracePeriodSeconds, "must not be set for readinessProbes"))
		}
	}
	return errs
}

// validateCommon is validateProbe: the handler, non-negative numbers and a
// positive probe-level grace period.
func validateCommon(p *corev1.Probe, path *field.Path) field.ErrorList {
	errs := validateHandler(&p.ProbeHandler, path)
	for _, n := range []struct {
		name  string
		value int32
	}{
		{"initialDelaySeconds", p.InitialDelaySeconds},
		{"timeoutSeconds", p.TimeoutSeconds},
		{"periodSeconds", p.PeriodSeconds},
		{"successThreshold", p.SuccessThreshold},
		{"failureThreshold", p.FailureThreshold},
	} {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(n.value), path.Child(n.name))...)
	}
	if g := p.TerminationGracePeriodSeconds; g != nil && *g <= 0 {
		errs = append(errs, field.Invalid(path.Child("terminationGracePeriodSeconds"), *g, "must be greater than 0"))
	}
	return errs
}

// validateHandler requires exactly one handler; later ones are forbidden,
// in the apiserver's order (exec, httpGet, tcpSocket, grpc).
func validateHandler(h *corev1.ProbeHandler, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := 0
	check := func(set bool, name string, validate func(*field.Path) field.ErrorList) {
		if !set {
			return
		}
		if n > 0 {
			errs = append(errs, field.Forbidden(path.Child(name), "may not specify more than 1 handler type"))
			return
		}
		n++
		errs = append(errs, validate(path.Child(name))...)
	}
	check(h.Exec != nil, "exec", func(p *field.Path) field.ErrorList { return validateExec(h.Exec, p) })
	check(h.HTTPGet != nil, "httpGet", func(p *field.Path) field.ErrorList { return validateHTTPGet(h.HTTPGet, p) })
	check(h.TCPSocket != nil, "tcpSocket", func(p *field.Path) field.ErrorList {
		return validatePortNumOrName(h.TCPSocket.Port, p.Child("port"))
	})
	check(h.GRPC != nil, "grpc", func(p *field.Path) field.ErrorList {
		return validatePortNumOrName(intstr.FromInt32(h.GRPC.Port), p.Child("port"))
	})
	if n == 0 {
		errs = append(errs, field.Required(path, "must specify a handler type"))
	}
	return errs
}

func validateExec(e *corev1.ExecAction, path *field.Path) field.ErrorList {
	if len(e.Command) == 0 {
		return field.ErrorList{field.Required(path.Child("command"), "")}
	}
	return nil
}

var supportedHTTPSchemes = sets.New(corev1.URISchemeHTTP, corev1.URISchemeHTTPS)

func validateHTTPGet(h *corev1.HTTPGetAction, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if h.Path == "" {
		errs = append(errs, field.Required(path.Child("path"), ""))
	}
	errs = append(errs, validatePortNumOrName(h.Port, path.Child("port"))...)
	if !supportedHTTPSchemes.Has(h.Scheme) {
		errs = append(errs, field.NotSupported(path.Child("scheme"), h.Scheme, sets.List(supportedHTTPSchemes)))
	}
	for _, hdr := range h.HTTPHeaders {
		for _, msg := range validation.IsHTTPHeaderName(hdr.Name) {
			errs = append(errs, field.Invalid(path.Child("httpHeaders"), hdr.Name, msg))
		}
	}
	return errs
}

// validatePortNumOrName is the apiserver's ValidatePortNumOrName: a number
// in 1-65535 or an IANA_SVC_NAME.
func validatePortNumOrName(port intstr.IntOrString, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch port.Type {
	case intstr.Int:
		for _, msg := range validation.IsValidPortNum(port.IntValue()) {
			errs = append(errs, field.Invalid(path, port.IntValue(), msg))
		}
	case intstr.String:
		for _, msg := range validation.IsValidPortName(port.StrVal) {
			errs = append(errs, field.Invalid(path, port.StrVal, msg))
		}
	default:
		errs = append(errs, field.InternalError(path, fmt.Errorf("unknown type: %v", port.Type)))
	}
	return errs
}

// validateContainerName requires the annotation's key to be a possible
// container name (a DNS-1123 label), else it could never match one.
func validateContainerName(name string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(name) {
		errs = append(errs, fieldError(field.ErrorTypeInvalid, "", name, msg))
	}
	return errs
}
