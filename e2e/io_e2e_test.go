//go:build e2e

package e2e_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/probelet/probelet/internal/testbed"
	"github.com/probelet/probelet/probespec"
	"github.com/probelet/probelet/quietio"
)

// TestProbeKindsOnBothIO (issue 42): every probe kind through probelet's
// own I/O (--io=quiet, the default) and through the libraries'
// (--io=std: net, net/http, grpc-go, Go timers), each on a bed of its own
// with TCP probes dialled: HTTP readiness through Success, a 404 and back,
// a refused TCP liveness, gRPC readiness, an exec readiness through its
// exit codes. Both modes say the same words for each, and each runs as it
// says: a timer file open in probelet under quiet, none under std.
func TestProbeKindsOnBothIO(t *testing.T) {
	t.Parallel()
	said := map[string][]string{}
	for _, mode := range []string{quietio.Quiet, quietio.Std} {
		t.Run(mode, func(t *testing.T) { said[mode] = probeKindsSay(t, mode) })
	}
	if q, s := strings.Join(said[quietio.Quiet], "\n"), strings.Join(said[quietio.Std], "\n"); q != s {
		t.Errorf("the modes said different things:\nquiet:\n%s\nstd:\n%s", q, s)
	}
}

// probeKindsSay runs the probe kinds under --io=mode and returns what each
// step's probe said.
func probeKindsSay(t *testing.T, mode string) []string {
	bed := testbed.Start(t)
	d := startProbelet(t, bed, "--io", mode, "--tcp-mode", "dial")
	web := runApp(t, bed, appSpec{name: "web", cmd: webApp, probes: probespec.ContainerProbes{
		Readiness: httpProbe("/", 1, 1), Liveness: tcpProbe(9999, 1, 1<<20)}})
	grpc := runApp(t, bed, appSpec{name: "grpc", cmd: grpcApp, probes: probespec.ContainerProbes{
		Readiness: grpcProbe(appPort, 1, 1)}})
	sh := runApp(t, bed, appSpec{name: "exec", cmd: shell("trap 'exit 0' TERM; while :; do sleep 1; done"), probes: probespec.ContainerProbes{
		Readiness: execProbe(1, 1, "sh", "-c", "test -f /tmp/ready || { echo not yet; exit 3; }")}})

	var said []string
	step := func(a app, ready bool, output string) {
		t.Helper()
		c := waitReady(t, d, a, ready, output)
		said = append(said, fmt.Sprintf("%s ready=%v: %q", a.name, ready, c.Probes["readiness"].LastOutput))
	}
	step(web, true, "probelet test bed\n")
	mustExec(t, bed, web.ctr, "mv", indexDoc, indexDoc+".off")
	step(web, false, "HTTP probe failed with statuscode: 404")
	mustExec(t, bed, web.ctr, "mv", indexDoc+".off", indexDoc)
	step(web, true, "probelet test bed\n")
	eventually(t, 15*time.Second, "web's liveness refused", func() (bool, string) {
		l := d.describe(web.ctr).Probes["liveness"]
		// Its threshold is never reached: the result stays Success.
		return strings.Contains(l.LastOutput, "connect: connection refused"), fmt.Sprintf("%+v", l)
	})
	said = append(said, "web liveness: refused")
	step(grpc, true, "")
	step(sh, false, "not yet")
	mustExec(t, bed, sh.ctr, "touch", "/tmp/ready")
	step(sh, true, "")

	timerFiles := openTimerFiles(t, d.cmd.Process.Pid)
	if want := mode == quietio.Quiet; (timerFiles > 0) != want {
		t.Errorf("--io=%s: probelet holds %d timer files (%s)", mode, timerFiles, fdCensus(d.cmd.Process.Pid))
	}
	t.Logf("--io=%s: %d timer files open; %s", mode, timerFiles, strings.Join(said, "; "))
	return said
}

// openTimerFiles counts pid's open timer files.
func openTimerFiles(t *testing.T, pid int) int {
	t.Helper()
	n, err := countOpenFiles(pid, func(link string) bool { return link == "anon_inode:[timerfd]" })
	if err != nil {
		t.Fatal(err)
	}
	return n
}
