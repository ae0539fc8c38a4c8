package probespec

import corev1 "k8s.io/api/core/v1"

// The Kubernetes defaults (pkg/apis/core/v1 SetDefaults_Probe): a zero
// value means "use the default", a negative one is kept for validation to
// reject.
const (
	DefaultTimeoutSeconds   = 1
	DefaultPeriodSeconds    = 10
	DefaultSuccessThreshold = 1
	DefaultFailureThreshold = 3
	// DefaultHTTPPath is the httpGet path when none is given.
	DefaultHTTPPath = "/"
)

// Default applies the Kubernetes defaults to each configured probe in place.
func Default(cp *ContainerProbes) {
	for _, p := range []*corev1.Probe{cp.Liveness, cp.Readiness, cp.Startup} {
		if p != nil {
			DefaultProbe(p)
		}
	}
}

// DefaultProbe applies SetDefaults_Probe, SetDefaults_HTTPGetAction and the
// generated gRPC service default to one probe; everything else the user
// wrote is kept.
func DefaultProbe(p *corev1.Probe) {
	p.TimeoutSeconds = orDefault(p.TimeoutSeconds, DefaultTimeoutSeconds)
	p.PeriodSeconds = orDefault(p.PeriodSeconds, DefaultPeriodSeconds)
	p.SuccessThreshold = orDefault(p.SuccessThreshold, DefaultSuccessThreshold)
	p.FailureThreshold = orDefault(p.FailureThreshold, DefaultFailureThreshold)
	if h := p.HTTPGet; h != nil {
		if h.Path == "" {
			h.Path = DefaultHTTPPath
		}
		if h.Scheme == "" {
			h.Scheme = corev1.URISchemeHTTP
		}
	}
	if g := p.GRPC; g != nil && g.Service == nil {
		empty := ""
		g.Service = &empty
	}
}

func orDefault(v, def int32) int32 {
	if v == 0 {
		return def
	}
	return v
}
