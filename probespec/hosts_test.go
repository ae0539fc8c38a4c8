package probespec_test

import (
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/probelet/probelet/probespec"
)

func TestHostScopeJudge(t *testing.T) {
	podIPs := []string{"10.1.2.3", "fd00::a"}
	cidrs := []netip.Prefix{netip.MustParsePrefix("192.168.50.0/24"), netip.MustParsePrefix("fd99::/64")}
	own := probespec.HostScope{PodIPs: podIPs}
	for _, tc := range []struct {
		name  string
		scope probespec.HostScope
		host  string
		want  probespec.HostVerdict
	}{
		{"empty is the pod's IP", own, "", probespec.HostAllowed},
		{"empty with IPs unknown", probespec.HostScope{}, "", probespec.HostAllowed},
		{"own IPv4", own, "10.1.2.3", probespec.HostAllowed},
		{"own IPv6", own, "fd00::a", probespec.HostAllowed},
		{"own IPv6 upper case", own, "FD00::A", probespec.HostAllowed},
		{"own IPv6 long form", own, "fd00:0:0:0:0:0:0:a", probespec.HostAllowed},
		{"own IPv6 bracketed", own, "[fd00::a]", probespec.HostAllowed},
		{"own IPv4 mapped in IPv6", own, "::ffff:10.1.2.3", probespec.HostAllowed},
		{"own IPv6 with a zone", own, "fd00::a%eth0", probespec.HostRefused},
		{"own IPv4 with leading zeros", own, "010.001.002.003", probespec.HostRefused},
		{"node loopback", own, "127.0.0.1", probespec.HostRefused},
		{"loopback with leading zeros", own, "127.000.000.001", probespec.HostRefused},
		{"loopback shorthand", own, "127.1", probespec.HostRefused},
		{"loopback as one number", own, "2130706433", probespec.HostRefused},
		{"loopback in hex", own, "0x7f.0.0.1", probespec.HostRefused},
		{"IPv6 loopback", own, "::1", probespec.HostRefused},
		{"IPv6 loopback bracketed", own, "[::1]", probespec.HostRefused},
		{"mapped loopback", own, "::ffff:127.0.0.1", probespec.HostRefused},
		{"localhost", own, "localhost", probespec.HostRefused},
		{"metadata name", own, "metadata.google.internal", probespec.HostRefused},
		{"metadata IP", own, "169.254.169.254", probespec.HostRefused},
		{"unspecified", own, "0.0.0.0", probespec.HostRefused},
		{"another pod", own, "10.1.2.4", probespec.HostRefused},
		{"hostNetwork allows anything", probespec.HostScope{PodIPs: podIPs, Any: true}, "127.0.0.1", probespec.HostAllowed},
		{"hostNetwork allows names", probespec.HostScope{Any: true}, "localhost", probespec.HostAllowed},
		{"in an allowed CIDR", probespec.HostScope{PodIPs: podIPs, CIDRs: cidrs}, "192.168.50.7", probespec.HostAllowed},
		{"in an allowed IPv6 CIDR", probespec.HostScope{PodIPs: podIPs, CIDRs: cidrs}, "[fd99::7]", probespec.HostAllowed},
		{"mapped into an allowed CIDR", probespec.HostScope{PodIPs: podIPs, CIDRs: cidrs}, "::ffff:192.168.50.7", probespec.HostAllowed},
		{"outside the CIDRs", probespec.HostScope{PodIPs: podIPs, CIDRs: cidrs}, "192.168.51.7", probespec.HostRefused},
		{"a name is never in a CIDR", probespec.HostScope{PodIPs: podIPs, CIDRs: []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0")}}, "localhost", probespec.HostRefused},
		{"IPs unknown: an IP waits", probespec.HostScope{}, "10.1.2.3", probespec.HostPending},
		{"IPs unknown: a name is refused", probespec.HostScope{}, "localhost", probespec.HostRefused},
		{"offline: any IP is refused", probespec.HostScope{Offline: true}, "10.1.2.3", probespec.HostRefused},
		{"offline hostNetwork", probespec.HostScope{Offline: true, Any: true}, "127.0.0.1", probespec.HostAllowed},
		{"offline CIDR", probespec.HostScope{Offline: true, CIDRs: cidrs}, "192.168.50.7", probespec.HostAllowed},
		{"namespace unknown: waits", probespec.HostScope{PodIPs: podIPs, Undecided: true}, "127.0.0.1", probespec.HostPending},
		{"namespace unknown: own IP runs", probespec.HostScope{PodIPs: podIPs, Undecided: true}, "10.1.2.3", probespec.HostAllowed},
		{"namespace unknown: names wait", probespec.HostScope{PodIPs: podIPs, Undecided: true}, "localhost", probespec.HostPending},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := tc.scope.Judge(tc.host)
			if got != tc.want {
				t.Fatalf("Judge(%q) = %v (%s), want %v", tc.host, got, why, tc.want)
			}
			if (got == probespec.HostAllowed) != (why == "") {
				t.Errorf("Judge(%q) = %v with reason %q", tc.host, got, why)
			}
		})
	}
}

func TestCheckHostsNamesPodContainerProbeAndField(t *testing.T) {
	probes := probespec.PodProbes{
		"app": {
			Readiness: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Host: "127.0.0.1"}}},
			Liveness:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Host: "10.1.2.3"}}},
		},
		"side": {Liveness: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Host: "metadata.google.internal"}}}},
		"fine": {Liveness: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{}}}},
	}
	errs := probespec.CheckHosts(probespec.PodRef{Namespace: "ns", Name: "web"}, probes, probespec.HostScope{PodIPs: []string{"10.1.2.3"}})
	got := errorStrings(errs)
	want := []string{
		`pod ns/web: container "app": readinessProbe.httpGet.host: Invalid value: "127.0.0.1": must be one of the pod's own IPs (10.1.2.3)`,
		`pod ns/web: container "side": livenessProbe.tcpSocket.host: Invalid value: "metadata.google.internal": must be one of the pod's own IPs (10.1.2.3), and a hostname is never one`,
	}
	if len(got) != len(want) {
		t.Fatalf("CheckHosts = %q, want %d errors", got, len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) || !strings.Contains(got[i], probespec.LabelAllowProbeHost+"=true") {
			t.Errorf("error %d = %q, want it to start %q and name the exceptions", i, got[i], want[i])
		}
	}
}

func TestParsedWithHosts(t *testing.T) {
	m := probespec.NewMemo(1 << 20)
	p := m.Parse(`{"app":{"readinessProbe":{"httpGet":{"host":"127.0.0.1","port":80}}},"db":{"livenessProbe":{"tcpSocket":{"port":5432}}}}`)
	if got := p.WithHosts(probespec.HostScope{Any: true}); got != p {
		t.Errorf("WithHosts(Any) made a copy; want the shared parse")
	}
	noHost := m.Parse(`{"db":{"livenessProbe":{"tcpSocket":{"port":5432}}}}`)
	if got := noHost.WithHosts(probespec.HostScope{}); got != noHost {
		t.Errorf("WithHosts without hosts made a copy")
	}
	got := p.WithHosts(probespec.HostScope{PodIPs: []string{"10.0.0.9"}})
	if _, ok := got.Probes["app"]; ok || got.ErrorFor("app") == "" {
		t.Errorf("app kept its probes (error %q)", got.ErrorFor("app"))
	}
	if _, ok := got.Probes["db"]; !ok || got.ErrorFor("db") != "" {
		t.Errorf("db lost its probes: %q", got.ErrorFor("db"))
	}
	if _, ok := p.Probes["app"]; !ok {
		t.Errorf("WithHosts changed the shared parse")
	}
}

func TestCheckRefusesHostsOffline(t *testing.T) {
	annotation := `{"app":{"livenessProbe":{"tcpSocket":{"host":"127.0.0.1","port":80}}}}`
	ref := probespec.PodRef{Namespace: "ns", Name: "web"}
	podSpec := &corev1.PodSpec{Containers: []corev1.Container{{Name: "app"}}}
	for _, tc := range []struct {
		name    string
		podSpec *corev1.PodSpec
		wantErr bool
	}{
		{"bare annotation", nil, true},
		{"pod", podSpec, true},
		{"hostNetwork pod", &corev1.PodSpec{HostNetwork: true, Containers: podSpec.Containers}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := probespec.Check(ref, annotation, tc.podSpec)
			if got := len(c.Errors) > 0; got != tc.wantErr {
				t.Fatalf("Check errors = %q, want errors: %v", errorStrings(c.Errors), tc.wantErr)
			}
			if tc.wantErr && !strings.Contains(c.Errors[0].Error(), "livenessProbe.tcpSocket.host") {
				t.Errorf("error %q does not name the field", c.Errors[0].Error())
			}
			if _, ok := c.Probes["app"]; ok == tc.wantErr {
				t.Errorf("app probes kept = %v", ok)
			}
		})
	}
}
