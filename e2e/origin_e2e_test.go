//go:build e2e

package e2e_test

import (
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/probelet/probelet/internal/testbed"
	"github.com/probelet/probelet/probespec"
)

// originApp serves HTTP on 8080 (every address) and gRPC health on 9090.
var originApp = shell(`trap "exit 0" TERM; httpd -f -p 8080 -h /var/www & grpc-health -port 9090 & wait`)

// originPod is one pod of the origin test: its HTTP readiness, TCP
// liveness (a threshold no test reaches: it never kills) and gRPC
// startup-free probes, each reported by probectl.
type originPod struct {
	app
	netns string
}

// runOriginPod runs a pod whose readiness is HTTP, whose liveness is a TCP
// dial (never reaching its threshold) and, in a second pod of the same
// annotations, whose readiness is gRPC; origin is its
// probelet.io/probe-origin ("" for none). A walled pod's namespace then
// drops every packet that does not come from itself, as a CNI that
// denies the node (or a strict policy) does.
func runOriginPod(t *testing.T, bed *testbed.Bed, name string, cmd []string, probes probespec.ContainerProbes, origin string, walled bool) originPod {
	t.Helper()
	var annotations map[string]string
	if origin != "" {
		annotations = map[string]string{probespec.AnnotationProbeOrigin: origin}
	}
	a := runApp(t, bed, appSpec{name: name, cmd: cmd, probes: probes, podAnnotations: annotations})
	netns, err := bed.PodNetNS(a.pod)
	if err != nil {
		t.Fatal(err)
	}
	if walled {
		nsenter(t, netns, "iptables", "-w", "-I", "INPUT", "!", "-i", "lo", "-j", "DROP")
	}
	return originPod{app: a, netns: netns}
}

func nsenter(t *testing.T, netns string, args ...string) {
	t.Helper()
	if out, err := exec.Command("nsenter", append([]string{"--net=" + netns}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("nsenter --net=%s %v: %v\n%s", netns, args, err, out)
	}
}

func webProbes() probespec.ContainerProbes {
	return probespec.ContainerProbes{Readiness: httpProbe("/", 1, 1), Liveness: tcpProbe(appPort, 1, 1<<20)}
}

func grpcProbes() probespec.ContainerProbes {
	return probespec.ContainerProbes{Readiness: grpcProbe(9090, 1, 1)}
}

// wantProbe waits until the container's probe t last said what want says:
// "ok" (the last run succeeded), or a part of its failure's output, or of
// its error; and that it came from origin (a prefix of probectl's).
func wantProbe(t *testing.T, d *daemon, a app, typ, want, origin string) {
	t.Helper()
	wantProbeSince(t, d, a, typ, want, origin, time.Time{})
}

// wantProbeSince is wantProbe for a run begun after since.
func wantProbeSince(t *testing.T, d *daemon, a app, typ, want, origin string, since time.Time) {
	t.Helper()
	eventually(t, 20*time.Second, fmt.Sprintf("%s %s: %s from %s", a.name, typ, want, origin), func() (bool, string) {
		v := d.describe(a.ctr)
		p, ok := v.Probes[typ]
		if !ok || len(p.History) == 0 {
			return false, fmt.Sprintf("no %s run yet", typ)
		}
		last := p.History[len(p.History)-1]
		said := last.Output + " " + last.Error
		fresh := time.Since(last.Time) < 5*time.Second && last.Time.After(since)
		switch {
		case !fresh:
			return false, fmt.Sprintf("the last run was at %v", last.Time)
		case !strings.HasPrefix(p.Origin, origin):
			return false, fmt.Sprintf("origin %q", p.Origin)
		case want == "ok":
			return last.Result == "Success", fmt.Sprintf("%s %q", last.Result, said)
		}
		return last.Result != "Success" && strings.Contains(said, want), fmt.Sprintf("%s %q", last.Result, said)
	})
}

// TestProbeOriginThroughAHostDenyingNetwork (issue 46): pods whose network
// namespaces drop every packet from outside themselves, as a CNI denying
// the node does. With the kubelet's origin (probelet --probe-origin node)
// their HTTP, gRPC and TCP-dial probes fail; with the pod's annotation,
// and then with --probe-origin pod for every pod, they pass, from the
// pod's own namespace; a pod that opts out keeps failing; an app listening
// on 127.0.0.1 only fails from either origin, as under the kubelet. A victim stays
// Ready and probed on time throughout.
func TestProbeOriginThroughAHostDenyingNetwork(t *testing.T) {
	t.Parallel()
	bed := testbed.Start(t)
	d := startProbelet(t, bed, "--tcp-mode", "dial", "--probe-origin", "node")
	victim := victimApp(t, bed, webApp)

	pods := map[string]originPod{}
	for _, p := range []struct {
		name, origin string
		cmd          []string
		probes       func() probespec.ContainerProbes
		walled       bool
	}{
		{"walled-web", "", originApp, webProbes, true},
		{"walled-grpc", "", originApp, grpcProbes, true},
		{"optin-web", "pod", originApp, webProbes, true},
		{"optin-grpc", "pod", originApp, grpcProbes, true},
		{"optout-web", "node", originApp, webProbes, true},
		{"loopback-web", "pod", loopbackWebApp, webProbes, false},
		{"loopback-node-web", "node", loopbackWebApp, webProbes, false},
	} {
		pods[p.name] = runOriginPod(t, bed, p.name, p.cmd, p.probes(), p.origin, p.walled)
	}
	timeout := "context deadline exceeded"
	check := func(stage string, walledPass bool) {
		t.Helper()
		t.Logf("%s", stage)
		walledWant, walledOrigin, grpcWant := timeout, "node", "timeout: failed to connect service"
		if walledPass {
			walledWant, walledOrigin, grpcWant = "ok", "pod net:[", "ok"
		}
		wantProbe(t, d, pods["walled-web"].app, "readiness", walledWant, walledOrigin)
		wantProbe(t, d, pods["walled-web"].app, "liveness", map[bool]string{true: "ok", false: "i/o timeout"}[walledPass], walledOrigin)
		wantProbe(t, d, pods["walled-grpc"].app, "readiness", grpcWant, walledOrigin)
		wantProbe(t, d, pods["optin-web"].app, "readiness", "ok", "pod net:[")
		wantProbe(t, d, pods["optin-web"].app, "liveness", "ok", "pod net:[")
		wantProbe(t, d, pods["optin-grpc"].app, "readiness", "ok", "pod net:[")
		wantProbe(t, d, pods["optout-web"].app, "readiness", timeout, "node")
		wantProbe(t, d, pods["optout-web"].app, "liveness", "i/o timeout", "node")
		wantProbe(t, d, pods["loopback-web"].app, "readiness", "connect: connection refused", "pod net:[")
		wantProbe(t, d, pods["loopback-web"].app, "liveness", "connect: connection refused", "pod net:[")
		wantProbe(t, d, pods["loopback-node-web"].app, "readiness", "connect: connection refused", "node")
		wantProbe(t, d, pods["loopback-node-web"].app, "liveness", "connect: connection refused", "node")
		if why := victimProbedWithin(d, victim, 3*time.Second); why != "" {
			t.Error(why)
		}
	}
	check("--probe-origin node: the walled pods fail but those opted in", false)

	d.stop()
	d.args = append(d.args, "--probe-origin", "pod")
	d.start()
	check("--probe-origin pod: every walled pod passes but the one opted out", true)
}

// TestProbeOriginReachesOnlyThePod (issue 46): a hostile pod under
// --probe-origin pod, whose probes name the node's loopback (which
// --allow-probe-host lets a node-origin probe dial), reaches nothing of
// the node: not from its own namespace, not with the preStop hook of
// probelet's kill, not after its namespace's file is
// mounted over with the node's namespace while probelet runs (the pinned
// namespace stays), and not after a restart of probelet with the node's or
// a victim's namespace mounted there (each refused: a prober error, no
// connection, nothing published). The victim stays Ready and on time.
func TestProbeOriginReachesOnlyThePod(t *testing.T) {
	t.Parallel()
	bed := testbed.Start(t)
	node := listenCounting(t, "127.0.0.1:0")
	d := startProbelet(t, bed, "--tcp-mode", "dial", "--probe-origin", "pod", "--allow-probe-host", "127.0.0.1/32")
	victim := victimApp(t, bed, webApp)
	nosyProbes := probespec.ContainerProbes{
		Readiness: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Host: "127.0.0.1", Path: "/", Port: intstr.FromInt32(int32(node.port()))}}, PeriodSeconds: 1, FailureThreshold: 1},
		Liveness: func() *corev1.Probe {
			p := tcpProbe(node.port(), 1, 1<<20)
			p.TCPSocket.Host = "127.0.0.1"
			return p
		}(),
	}
	nosy := runOriginPod(t, bed, "nosy", webApp, nosyProbes, "", false)
	victimNS, err := bed.PodNetNS(victim.pod)
	if err != nil {
		t.Fatal(err)
	}
	refused := fmt.Sprintf("dial tcp 127.0.0.1:%d: connect: connection refused", node.port())
	noConnection := func(stage string) {
		t.Helper()
		if n := node.accepts.Load(); n != 0 {
			t.Fatalf("%s: the node's loopback service got %d connections", stage, n)
		}
		// After a restart the victim's first run comes within its period.
		eventually(t, 5*time.Second, stage+": the victim Ready and on time", func() (bool, string) {
			why := victimProbedWithin(d, victim, 3*time.Second)
			return why == "", why
		})
	}

	wantProbe(t, d, nosy.app, "readiness", refused, "pod net:[")
	wantProbe(t, d, nosy.app, "liveness", refused, "pod net:[")
	noConnection("from its own namespace")

	// The preStop hook probelet runs before its own kill comes from the
	// pod too: aimed at the node's service, it is refused there.
	hooky := runApp(t, bed, appSpec{name: "hooky", cmd: webApp,
		probes: probespec.ContainerProbes{Liveness: tcpProbe(9, 1, 1)}, // nothing listens: killed at once
		ctrAnnotations: map[string]string{probespec.AnnotationPreStopHandler: fmt.Sprintf(
			`{"httpGet":{"host":"127.0.0.1","path":"/","port":%d}}`, node.port())}})
	eventually(t, 20*time.Second, "the hooky pod killed after its failed preStop hook", func() (bool, string) {
		out, _, _ := d.probectl("events", "-o", "json")
		c, _ := d.ctr(hooky.ctr)
		return c.RestartsIssued > 0 && strings.Contains(out, probespec.EventFailedPreStopHook),
			fmt.Sprintf("%d restarts issued", c.RestartsIssued)
	})
	noConnection("a preStop hook aimed at the node")

	// The namespace's file now names the node's namespace: the pinned one
	// is still what the probes come from.
	if !strings.HasPrefix(nosy.netns, "/proc/") {
		undo := mountOver(t, "/proc/self/ns/net", nosy.netns)
		wantProbeSince(t, d, nosy.app, "readiness", refused, "pod net:[", time.Now().Add(2*time.Second)) // two periods on
		wantProbeSince(t, d, nosy.app, "liveness", refused, "pod net:[", time.Now())
		noConnection("with the node's namespace mounted over its file")

		d.stop()
		d.start()
		wantProbe(t, d, nosy.app, "readiness", "is the node's network namespace", "pod")
		wantProbe(t, d, nosy.app, "liveness", "is the node's network namespace", "pod")
		noConnection("after a restart, the node's namespace on its file")
		undo()

		undo = mountOver(t, victimNS, nosy.netns)
		d.stop()
		d.start()
		wantProbe(t, d, nosy.app, "readiness", "does not hold the pod's address", "pod")
		noConnection("after a restart, the victim's namespace on its file")
		undo()
	} else {
		t.Errorf("the runtime names the pod's namespace %s, a /proc path: the mount-over attacks cannot be tried", nosy.netns)
	}
	if c, _ := d.ctr(nosy.ctr); c.Ready || c.RestartsIssued != 0 {
		t.Errorf("the nosy pod: ready %v, %d restarts issued; want not ready, none", c.Ready, c.RestartsIssued)
	}
}

// victimProbedWithin says why the victim is not Ready with a readiness run
// within window, "" when it is (beside parallel tests and restarts, a
// window of its period plus what a loaded node adds).
func victimProbedWithin(d *daemon, v app, window time.Duration) string {
	c, ok := d.ctr(v.ctr)
	if !ok {
		return "the victim is not listed"
	}
	r := c.Probes["readiness"]
	if !c.Ready || r.LastProbeTime == nil || time.Since(*r.LastProbeTime) > window {
		return fmt.Sprintf("the victim is late or not ready: ready %v, readiness %+v", c.Ready, r)
	}
	return ""
}

// mountOver bind-mounts src over dst and returns its undo, which the
// test's end calls too if the test did not: once, so the runtime's own
// mount of dst stays for it to remove.
func mountOver(t *testing.T, src, dst string) (undo func()) {
	t.Helper()
	if out, err := exec.Command("mount", "--bind", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("mount --bind %s %s: %v\n%s", src, dst, err, out)
	}
	var once sync.Once
	undo = func() {
		once.Do(func() {
			if out, err := exec.Command("umount", dst).CombinedOutput(); err != nil {
				t.Errorf("umount %s: %v\n%s", dst, err, out)
			}
		})
	}
	t.Cleanup(undo)
	return undo
}
