package probespec

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// HostScope is what a pod's probes may name as their host. An empty host
// (the pod's own IP, as the kubelet defaults it) is always allowed; any
// other must be one of the pod's IPs unless an operator made an exception.
// probelet dials from the node's network, so a host outside the pod is a
// request forged past Pod Security, which forbids host in native probes.
type HostScope struct {
	// PodIPs are the pod's own addresses; empty while they are unknown.
	PodIPs []string
	// Any is an operator's exception for the whole pod: it runs in the
	// node's network namespace (hostNetwork), or its namespace carries
	// LabelAllowProbeHost=true.
	Any bool
	// CIDRs are the operator's --allow-probe-host ranges: IP literals in
	// them are allowed, hostnames never (what a name resolves to may
	// change between the check and the dial).
	CIDRs []netip.Prefix
	// Offline is set where no pod IP can ever be known (`probelet
	// validate`, `probelet convert`): a host not otherwise allowed is an
	// error rather than waiting for the pod's IPs.
	Offline bool
	// Undecided is set while an exception may still apply (the pod's
	// namespace labels are not known yet): a host not otherwise allowed
	// waits, neither rejected nor dialed.
	Undecided bool
}

// HostVerdict is what a HostScope says about one host.
type HostVerdict int8

// Verdicts of HostScope.Judge.
const (
	// HostAllowed: the probe may dial the host.
	HostAllowed HostVerdict = iota
	// HostRefused: a spec error; the probe never runs.
	HostRefused
	// HostPending: not known yet (the pod's IPs, its namespace's labels);
	// the probe must not dial until it is.
	HostPending
)

// Judge says whether a probe may name host, and why not.
func (s HostScope) Judge(host string) (HostVerdict, string) {
	if host == "" || s.Any {
		return HostAllowed, ""
	}
	addr, ok := ParseHostIP(host)
	switch {
	case ok && s.ownIP(addr):
		return HostAllowed, ""
	case ok && slices.ContainsFunc(s.CIDRs, func(p netip.Prefix) bool { return p.Contains(addr) }):
		return HostAllowed, ""
	case s.Undecided:
		return HostPending, "waits for the pod's namespace labels"
	case ok && len(s.PodIPs) == 0 && !s.Offline:
		return HostPending, "waits for the pod's IPs"
	}
	return HostRefused, s.refusal(ok)
}

// ownIP reports whether addr is one of the pod's IPs.
func (s HostScope) ownIP(addr netip.Addr) bool {
	for _, ip := range s.PodIPs {
		if own, ok := ParseHostIP(ip); ok && own == addr {
			return true
		}
	}
	return false
}

// exceptions names the ways an operator lets a probe reach another host.
const exceptions = "hostNetwork pods, namespaces labelled " + LabelAllowProbeHost + "=true, and --allow-probe-host CIDRs are the exceptions"

func (s HostScope) refusal(isIP bool) string {
	if s.Offline {
		return "must be empty: a probe may reach only its own pod, whose IP is assigned when it runs; " + exceptions
	}
	what := "one of the pod's own IPs"
	if len(s.PodIPs) > 0 {
		what += " (" + strings.Join(s.PodIPs, ", ") + ")"
	}
	if !isIP {
		what += ", and a hostname is never one"
	}
	return "must be " + what + "; " + exceptions
}

// ParseHostIP reads host as an IP literal, strictly: an IPv6 address may
// be bracketed, an IPv4-mapped one counts as the IPv4 address, case does
// not matter. Anything else — a hostname (localhost, metadata.google.internal),
// an IPv4 address with leading zeros or fewer than four parts (127.000.000.001,
// 127.1, which some resolvers read as octal or shorthand), one with a zone —
// is not an IP literal.
func ParseHostIP(host string) (netip.Addr, bool) {
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	addr, err := netip.ParseAddr(host)
	if err != nil || addr.Zone() != "" {
		return netip.Addr{}, false
	}
	return addr.Unmap(), true
}

// ProbeHost returns a probe's host field and its path below the probe
// (httpGet.host, tcpSocket.host); gRPC and exec probes have none.
func ProbeHost(p *corev1.Probe) (string, string) {
	switch {
	case p == nil:
	case p.HTTPGet != nil:
		return p.HTTPGet.Host, "httpGet.host"
	case p.TCPSocket != nil:
		return p.TCPSocket.Host, "tcpSocket.host"
	}
	return "", ""
}

// CheckHosts returns an error for each probe whose host scope refuses.
func CheckHosts(pod PodRef, probes PodProbes, scope HostScope) ErrorList {
	var errs ErrorList
	for _, name := range slices.Sorted(maps.Keys(probes)) {
		var ferrs field.ErrorList
		for _, t := range Types {
			p := probes[name].Get(t)
			host, path := ProbeHost(p)
			if v, why := scope.Judge(host); v == HostRefused {
				ferrs = append(ferrs, field.Invalid(field.NewPath(FieldName(t)).Child(path), host, why))
			}
		}
		errs = append(errs, wrap(pod, name, ferrs)...)
	}
	return errs
}

// NamesHost reports whether any probe names a host.
func NamesHost(probes PodProbes) bool {
	for _, cp := range probes {
		for _, t := range Types {
			if host, _ := ProbeHost(cp.Get(t)); host != "" {
				return true
			}
		}
	}
	return false
}

// WithHosts applies a pod's host scope to p: the containers with a probe
// whose host it refuses lose their probes, with the reason. It returns p
// itself when nothing is refused (no probe names a host, the common case),
// else a new Parsed of the pod's own.
func (p *Parsed) WithHosts(scope HostScope) *Parsed {
	if !NamesHost(p.Probes) {
		return p
	}
	bad := CheckHosts(PodRef{}, p.Probes, scope)
	if len(bad) == 0 {
		return p
	}
	probes, errs := reject(p.Probes, append(slices.Clone(p.List), bad...))
	return newParsed(p.Value, probes, errs)
}

// reject sorts errs by container and returns the probes of the containers
// without any.
func reject(probes PodProbes, errs ErrorList) (PodProbes, ErrorList) {
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Container < errs[j].Container })
	valid := maps.Clone(probes)
	if valid == nil {
		valid = PodProbes{}
	}
	for _, bad := range errs.Containers() {
		delete(valid, bad)
	}
	return valid, errs
}

// String names a verdict in logs.
func (v HostVerdict) String() string {
	switch v {
	case HostAllowed:
		return "allowed"
	case HostRefused:
		return "refused"
	case HostPending:
		return "pending"
	}
	return fmt.Sprintf("HostVerdict(%d)", int(v))
}
