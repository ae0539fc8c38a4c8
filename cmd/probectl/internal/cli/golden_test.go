package cli_test

import (
	"strings"
	"testing"
	"time"

	"github.com/probelet/probelet/cri/server"
	"github.com/probelet/probelet/cri/server/servertest"
	"github.com/probelet/probelet/prober"
	"github.com/probelet/probelet/prober/probe"
	"github.com/probelet/probelet/prober/results"
	"github.com/probelet/probelet/probespec"
)

// Every command's output against the fixture, compared with testdata/.
func TestGoldenOutputs(t *testing.T) {
	_, endpoint, _, _ := servertest.StartFixture(t)
	tests := []struct {
		golden string
		args   []string
	}{
		{"ps.txt", []string{"ps"}},
		{"ps_wide.txt", []string{"ps", "-o", "wide"}},
		{"ps_wide_no_trunc.txt", []string{"ps", "-o", "wide", "--no-trunc"}},
		{"ps_quiet.txt", []string{"ps", "-q"}},
		{"ps_filtered.txt", []string{"ps", "default/web"}},
		{"ps.json", []string{"ps", "-o", "json"}},
		{"ps.yaml", []string{"ps", "-o", "yaml"}},
		{"describe_web_app.txt", []string{"describe", "default/web/app"}},
		{"describe_coredns.txt", []string{"describe", "b1"}},
		{"describe_job_worker.txt", []string{"describe", "job/worker"}},
		{"describe_sidecar.txt", []string{"describe", "web/sidecar"}},
		{"describe_web_app.json", []string{"describe", "web/app", "-o", "json", "--history", "2"}},
		{"why_web_app.txt", []string{"why", "web/app"}},
		{"why_coredns.txt", []string{"why", "dns/coredns"}},
		{"why_job_worker.txt", []string{"why", "c1"}},
		{"why_web_app.yaml", []string{"why", "web/app", "-o", "yaml"}},
		{"events.txt", []string{"events"}},
		{"events_coredns.json", []string{"events", "dns/coredns", "-o", "json"}},
		{"version.txt", []string{"version"}},
	}
	for _, tt := range tests {
		t.Run(tt.golden, func(t *testing.T) {
			r := probectl(t, endpoint, tt.args...)
			if r.code != 0 || r.errOut != "" {
				t.Fatalf("probectl %s: exit %d, stderr %q", strings.Join(tt.args, " "), r.code, r.errOut)
			}
			servertest.Golden(t, tt.golden, []byte(r.out))
		})
	}
}

// A kill the kill guard holds back is marked in ps and explained by why.
func TestGoldenKillDeferred(t *testing.T) {
	_, endpoint, status, _ := servertest.StartFixture(t)
	cs := servertest.Statuses()
	for i := range cs {
		if cs[i].ContainerID != servertest.DNSCoreID {
			continue
		}
		live := cs[i].Probes[probespec.Liveness]
		live.Result, live.Consecutive, live.LastOutput = results.Failure, 7, "connection refused"
		live.KillDeferred = "node in FullDisruption, 18 of 20 liveness probes failing since 11:59:53"
		live.KillDeferredSince = live.LastProbeTime.Add(-2 * time.Second)
		live.History = append(live.History, prober.ProbeRecord{Time: live.LastProbeTime.Add(time.Second),
			Result: results.Failure, Duration: time.Millisecond, Output: "connection refused", Method: probe.MethodHTTP})
		cs[i].Probes[probespec.Liveness] = live
	}
	status.Set(cs...)
	for _, tt := range []struct {
		golden string
		args   []string
	}{
		{"ps_kill_deferred.txt", []string{"ps"}},
		{"ps_wide_kill_deferred.txt", []string{"ps", "-o", "wide"}},
		{"why_kill_deferred.txt", []string{"why", "dns/coredns"}},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			r := probectl(t, endpoint, tt.args...)
			if r.code != 0 || r.errOut != "" {
				t.Fatalf("probectl %s: exit %d, stderr %q", strings.Join(tt.args, " "), r.code, r.errOut)
			}
			servertest.Golden(t, tt.golden, []byte(r.out))
		})
	}
}

// probectl version says how TCP probes are answered, and spells out a
// short-circuit that did not load.
func TestVersionSaysHowTCPProbesAreAnswered(t *testing.T) {
	for _, tt := range []struct {
		golden string
		st     server.TCPStatus
	}{
		{"version_tcp_ebpf.txt", server.TCPStatus{Requested: "auto", Mode: "ebpf"}},
		{"version_tcp_dial.txt", server.TCPStatus{Requested: "dial", Mode: "dial"}},
		{"version_tcp_loading.txt", server.TCPStatus{Requested: "auto"}},
		{"version_tcp_fallback.txt", server.TCPStatus{Requested: "auto", Mode: "dial",
			Reason: "tracker: verifier rejected tracker.c: load program: permission denied: 204: (85) call bpf_get_socket_cookie#46: R1 type=untrusted_ptr_"}},
	} {
		t.Run(tt.golden, func(t *testing.T) {
			_, endpoint, _, _ := servertest.StartFixture(t, server.WithTCPStatus(func() server.TCPStatus { return tt.st }))
			r := probectl(t, endpoint, "version")
			if r.code != 0 || r.errOut != "" {
				t.Fatalf("probectl version: exit %d, stderr %q", r.code, r.errOut)
			}
			servertest.Golden(t, tt.golden, []byte(r.out))
		})
	}
}
