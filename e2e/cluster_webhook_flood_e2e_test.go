//go:build e2e

package e2e_test

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/probelet/probelet/controller/webhook"
	"github.com/probelet/probelet/internal/cluster"
	"github.com/probelet/probelet/internal/testbed"
	"github.com/probelet/probelet/probespec"
)

// The flood of TestClusterWebhookFloodLeavesTheSafetyNet: the issue's
// 5 dry-run creates a second of a 3 MB pod for 2 minutes.
const (
	floodRate     = 5
	floodPodBytes = 3_000_000 // under the API server's 3 MiB request limit
	floodHold     = 2 * time.Minute
	// controllerMemory is deploy/controller's memory limit.
	controllerMemory = 256 << 20
)

// TestClusterWebhookFloodLeavesTheSafetyNet (issue 41): the webhook and the
// Lease monitor share probelet-controller's process; the webhook's memory
// is bounded by construction (reviews read and converted a few at a time,
// a pod over 256 KiB never parsed), which leaves the monitor its room.
// Shown on the real control plane with deploy/controller's configuration:
// the controller in a memory cgroup of its limit (256 MiB, GOMEMLIMIT as
// the Deployment sets it), two nodes running probelet, a gated pod on
// each. Any pod creator sends 5 dry-run creates a second of a 3 MB pod
// labelled probelet.io/probes=managed for 2 minutes, and once the webhook answers it, A's
// probelet is SIGKILLed: A's pod is marked within grace + 10 s, B's pod
// stays True, a small labelled pod created during the flood is converted,
// and the controller is never OOM-killed nor restarted.
func TestClusterWebhookFloodLeavesTheSafetyNet(t *testing.T) {
	t.Parallel()
	c := cluster.Start(t)
	a := joinNode(t, c)
	a.applyDeployRights()
	for _, f := range []string{"serviceaccount.yaml", "rbac.yaml", "admission-policy.yaml"} {
		if out, err := c.Kubectl("apply", "-n", "probelet-system", "-f", filepath.Join(repoRoot(), "deploy", "controller", f)); err != nil {
			t.Fatalf("kubectl apply controller/%s: %v\n%s", f, err, out)
		}
	}
	b := joinNode(t, c)
	a.startProbelet()
	b.startProbelet()
	ctx := context.Background()

	addr := freeLoopbackPort(t)
	a.createWebhookConfig(ctx, "https://"+addr+webhook.Path)
	cg := memoryCgroup(t, "controller", controllerMemory)
	ctl := startWebhookControllerIn(t, a, addr, inCgroup(cg, fmt.Sprintf("GOMEMLIMIT=%d", controllerMemory)))
	pid := ctl.cmd.Process.Pid
	eventually(t, 60*time.Second, "the webhook serving its certificate", func() (bool, string) {
		_, err := servedSerial(addr)
		return err == nil, fmt.Sprint(err)
	})

	readiness := execProbeSpec(2, 1, "true")
	a.create(a.apiPod("a1", shell("sleep 3600"), probespec.ContainerProbes{Readiness: readiness}, true))
	b.create(b.apiPod("b1", shell("sleep 3600"), probespec.ContainerProbes{Readiness: readiness}, true))
	gates := &safetyNet{t: t, c: c, a: a}
	eventually(t, 60*time.Second, "a1 and b1 True", gates.gatesAre(corev1.ConditionTrue, "a1", "b1"))

	f := startDryRunFlood(t, a, floodBomb(t))
	// The flood under way: the webhook has answered its first reviews.
	eventually(t, 30*time.Second, "the webhook answering the flood", func() (bool, string) {
		n := ctl.sumWhere("probelet_webhook_admissions_total", map[string]string{"result": webhook.ResultTooLarge})
		return n >= 2*floodRate, fmt.Sprintf("%v reviews answered too large", n)
	})
	// Killed just before its Lease's next renewal: the controller judges
	// silence from when it saw the last one (up to a monitor pass late),
	// so a kill right after a renewal alone would take grace + two passes,
	// the whole bound; this way the bound has the flood's effect to show.
	renewed := leaseRenewal(t, a)
	eventually(t, 2*probespec.LeaseRenewInterval, "A's Lease renewed", func() (bool, string) {
		r := leaseRenewal(t, a)
		return r.After(renewed), fmt.Sprintf("renewed at %v", r)
	})
	time.Sleep(probespec.LeaseRenewInterval - 2*time.Second)
	down := time.Now()
	a.d.kill()
	gates.waitMarked("a1", probespec.ReasonProbeletUnavailable, down.Add(safetyGrace+10*time.Second))
	marked := time.Since(down)

	// A small labelled pod during the flood is converted as ever.
	small := a.apiPod("small", shell("sleep 3600"), probespec.ContainerProbes{}, false)
	small.Labels[probespec.LabelProbes] = probespec.LabelManaged
	small.Annotations = nil
	small.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
		Exec: &corev1.ExecAction{Command: []string{"true"}}}, PeriodSeconds: 2}
	created, err := a.admin.CoreV1().Pods("default").Create(ctx, small, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatalf("a small labelled pod during the flood: %v", err)
	}
	if created.Annotations[probespec.AnnotationProbes] == "" || created.Spec.Containers[0].ReadinessProbe != nil {
		t.Errorf("a small labelled pod during the flood was not converted: annotations %v, readiness %v",
			created.Annotations, created.Spec.Containers[0].ReadinessProbe)
	}

	during(t, time.Until(f.started.Add(floodHold)), "b1 True and the controller alive through the flood", func() (bool, string) {
		if ctl.exited() {
			return false, "the controller exited: " + ctl.logTail(20)
		}
		return gates.gatesAre(corev1.ConditionTrue, "b1")()
	})
	sent, failed := f.stop()
	if n := cgroupOOMKills(t, cg); n != 0 {
		t.Fatalf("the controller's cgroup saw %d OOM kills", n)
	}
	if ctl.cmd.Process.Pid != pid || ctl.runs != 1 {
		t.Fatalf("the controller was restarted")
	}
	if least := floodRate * int(floodHold.Seconds()) * 8 / 10; sent < least {
		t.Errorf("%d dry-run creates sent in %v, want at least %d (%d a second)", sent, floodHold, least, floodRate)
	}
	tooLarge := ctl.sumWhere("probelet_webhook_admissions_total", map[string]string{"result": webhook.ResultTooLarge})
	if tooLarge < float64(sent-failed)/2 {
		t.Errorf("the webhook answered %v reviews too large, for %d dry-run creates the API server took", tooLarge, sent-failed)
	}
	t.Logf("%d dry-run creates of a %d-byte labelled pod in %v (%d failed); the webhook answered %v too large; "+
		"a1 marked %v after probelet was killed (grace %v); the controller's cgroup peaked at %.1f MiB of %d, no OOM kill",
		sent, floodPodBytes, floodHold, failed, tooLarge, marked.Round(time.Second), safetyGrace,
		float64(cgroupPeak(t, cg))/(1<<20), controllerMemory>>20)
}

// floodBomb is a pod of about floodPodBytes of JSON, labelled for the
// webhook: its container's environment holds the bulk.
func floodBomb(t *testing.T) *corev1.Pod {
	t.Helper()
	const vars = 30
	value := strings.Repeat("x", floodPodBytes/vars-64)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "bomb-", Namespace: "default",
			Labels: map[string]string{probespec.LabelProbes: probespec.LabelManaged}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: testbed.BusyboxImage,
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}}}},
	}
	for i := range vars {
		p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: fmt.Sprintf("PAD_%d", i), Value: value})
	}
	return p
}

// dryRunFlood sends floodRate dry-run creates of a pod a second, each on
// a goroutine of its own (at most 4 s of them in flight), until stopped.
type dryRunFlood struct {
	started      time.Time
	stopped      chan struct{}
	wg           sync.WaitGroup
	sent, failed atomic.Int64
}

func startDryRunFlood(t *testing.T, n *clusterNode, p *corev1.Pod) *dryRunFlood {
	f := &dryRunFlood{started: time.Now(), stopped: make(chan struct{})}
	inFlight := make(chan struct{}, 4*floodRate)
	var firstErr sync.Once
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		tick := time.NewTicker(time.Second / floodRate)
		defer tick.Stop()
		for {
			select {
			case <-f.stopped:
				return
			case <-tick.C:
			}
			select {
			case inFlight <- struct{}{}:
			default:
				continue // the API server is behind: the tick is lost, not queued
			}
			f.sent.Add(1)
			f.wg.Add(1)
			go func() {
				defer func() { <-inFlight; f.wg.Done() }()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				if _, err := n.admin.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
					f.failed.Add(1)
					firstErr.Do(func() { t.Logf("a dry-run create failed: %v", err) })
				}
			}()
		}
	}()
	return f
}

// stop ends the flood and waits for the creates in flight.
func (f *dryRunFlood) stop() (sent, failed int) {
	close(f.stopped)
	f.wg.Wait()
	return int(f.sent.Load()), int(f.failed.Load())
}

// leaseRenewal is the renewTime of n's probelet Lease.
func leaseRenewal(t *testing.T, n *clusterNode) time.Time {
	t.Helper()
	l, err := n.admin.CoordinationV1().Leases("probelet-system").Get(context.Background(), n.k.NodeName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Spec.RenewTime == nil {
		return time.Time{}
	}
	return l.Spec.RenewTime.Time
}

// startWebhookControllerIn is startWebhookController with its process
// wrapped (a cgroup, an environment).
func startWebhookControllerIn(t *testing.T, n *clusterNode, addr string, wrap []string) *daemon {
	t.Helper()
	kubeconfig, err := n.c.ServiceAccountKubeconfig(context.Background(), "probelet-system", "probelet-controller", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	host, _, _ := net.SplitHostPort(addr)
	d := &daemon{t: t, bed: n.bed, name: "probelet-controller", bin: bins.controller, wrap: wrap,
		args: []string{"--kubeconfig", kubeconfig, "--metrics-bind-address", "127.0.0.1:0", "--leader-elect=false",
			"--webhook-listen", addr, "--webhook-cert-hosts", host, "--webhook-cert-validity", webhookCertValidity.String()}}
	t.Cleanup(d.cleanup)
	d.start()
	return d
}
