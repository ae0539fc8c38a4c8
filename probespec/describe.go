package probespec

import (
	"fmt"
	"net"
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Describe renders a probe on one line the way `kubectl describe pod`
// does, so it reads familiar:
// `http-get http://:8080/healthz delay=0s timeout=1s period=10s #success=1 #failure=3`.
// HTTP headers and a probe-level grace period are appended when set.
func Describe(p *corev1.Probe) string {
	if p == nil {
		return "<none>"
	}
	attrs := fmt.Sprintf("delay=%ds timeout=%ds period=%ds #success=%d #failure=%d",
		p.InitialDelaySeconds, p.TimeoutSeconds, p.PeriodSeconds, p.SuccessThreshold, p.FailureThreshold)
	if g := p.TerminationGracePeriodSeconds; g != nil {
		attrs += fmt.Sprintf(" terminationGracePeriod=%ds", *g)
	}
	return describeHandler(&p.ProbeHandler) + " " + attrs
}

func describeHandler(h *corev1.ProbeHandler) string {
	switch {
	case h.Exec != nil:
		return fmt.Sprintf("exec %v", h.Exec.Command)
	case h.HTTPGet != nil:
		return describeHTTP(h.HTTPGet)
	case h.TCPSocket != nil:
		return fmt.Sprintf("tcp-socket %s:%s", h.TCPSocket.Host, h.TCPSocket.Port.String())
	case h.GRPC != nil:
		s := fmt.Sprintf("grpc <pod>:%d", h.GRPC.Port)
		if h.GRPC.Service != nil && *h.GRPC.Service != "" {
			s += " service=" + *h.GRPC.Service
		}
		return s
	}
	return "unknown"
}

func describeHTTP(g *corev1.HTTPGetAction) string {
	u := &url.URL{Scheme: strings.ToLower(string(g.Scheme)), Path: g.Path, Host: g.Host}
	if port := g.Port.String(); port != "" {
		u.Host = net.JoinHostPort(g.Host, port)
	}
	s := "http-get " + u.String()
	if len(g.HTTPHeaders) == 0 {
		return s
	}
	hdrs := make([]string, len(g.HTTPHeaders))
	for i, h := range g.HTTPHeaders {
		hdrs[i] = h.Name + "=" + h.Value
	}
	return s + " headers=[" + strings.Join(hdrs, " ") + "]"
}
