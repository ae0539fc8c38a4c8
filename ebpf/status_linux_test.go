package ebpf_test

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/probelet/probelet/ebpf"
	"github.com/probelet/probelet/ebpf/ebpftest"
	"github.com/probelet/probelet/internal/testutil"
)

// TestStatusSaysHowProbesAreAnswered: the mode asked for, the mode in
// force and, where they differ, why; the alerting gauge is 0 unless auto
// fell back. As root (CI) the tracker must load on this kernel: auto that
// dials there is a failure, never a pass.
func TestStatusSaysHowProbesAreAnswered(t *testing.T) {
	ebpftest.RequireRoot(t)
	for _, tc := range []struct {
		mode, want ebpf.Mode
	}{
		{ebpf.ModeDial, ebpf.ModeDial},
		{ebpf.ModeAuto, ebpf.ModeEBPF},
		{ebpf.ModeEBPF, ebpf.ModeEBPF},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			reg := prometheus.NewRegistry()
			p, err := ebpf.NewTCPProber(context.Background(), tc.mode, ebpf.WithRegisterer(reg))
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			st := p.Status()
			if st.Requested != tc.mode || st.Mode != tc.want || st.FellBack() || st.Reason != "" || st.Cause != "" {
				t.Fatalf("Status = %+v, want %s in force as asked, no reason", st, tc.want)
			}
			if (st.Features != "") != (tc.want == ebpf.ModeEBPF) {
				t.Errorf("Features = %q with mode %s", st.Features, st.Mode)
			}
			if got := testutil.Metric(t, reg, "probelet_tcp_shortcircuit_unavailable", nil); got != 0 {
				t.Errorf("probelet_tcp_shortcircuit_unavailable = %v, want 0", got)
			}
			t.Logf("%+v", st)
		})
	}
}
