//go:build e2e

package e2e_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"

	"github.com/probelet/probelet/controller/monitor"
	"github.com/probelet/probelet/internal/cluster"
	"github.com/probelet/probelet/probespec"
)

// The controller's timings the test's windows come from: its defaults
// (--grace-period; leader election as kube-controller-manager's).
const (
	safetyGrace         = monitor.DefaultGracePeriod
	monitorPeriod       = monitor.DefaultPeriod
	leaderLeaseDuration = 15 * time.Second
	leaderRetryPeriod   = 2 * time.Second
	// leaderTakeover bounds how long after the leader's death the other
	// replica leads: client-go's candidate polls every retry period with
	// a jitter of up to 1.2 more, sees the leader's last renewal at its
	// first poll after it (the Lease's age is judged by the candidate's
	// own clock, from then), waits the lease duration, and takes the Lease
	// at its next poll.
	leaderTakeover = leaderLeaseDuration + 2*leaderRetryPeriod*22/10
)

// safetyNet is a real control plane with three nodes on this machine,
// each a kubelet on its own containerd test bed: A and B run probelet, C
// never does; two probelet-controller replicas elect a leader. The cost:
// three beds and kubelets (about 40 MiB and 0.3 s of CPU each at start),
// one control plane.
type safetyNet struct {
	t       *testing.T
	c       *cluster.Cluster
	a, b, x *clusterNode // x is node C, without probelet
	ctls    []*daemon
	period  int32 // the pods' readiness period, seconds
}

// TestClusterProbeletDownSafetyNet: issue 28's "must show", in one
// sequence on one cluster (each step is a grace period or more of real
// time, so they share the bed):
//  1. a gated pod on a node without probelet is marked ProbeletNotRunning
//     after the grace period;
//  2. probelet on A restarted within the grace period: nothing is marked;
//  3. probelet on A killed and kept down: A's gated pods are marked
//     ProbeletUnavailable within grace + 10 s, with an Event each; B's
//     pods are untouched;
//  4. the leading controller killed: the other leads within the leader
//     Lease's duration and two polls (leaderTakeover), and marks nothing
//     twice;
//  5. probelet on A back: A's pods are True again within 2 probe periods
//     of its first probe;
//  6. probelet stopped on A and B (every zone fully disrupted): nothing is
//     marked, and the controller says why on each node.
func TestClusterProbeletDownSafetyNet(t *testing.T) {
	t.Parallel()
	s := startSafetyNet(t)
	ctx := context.Background()

	started := time.Now()
	// The webhook has its own test (TestClusterWebhook).
	s.ctls = append(s.ctls, s.startController("ctl-1", "--webhook-listen="))
	leader := s.waitLeader(s.ctls[0], 30*time.Second)
	s.ctls = append(s.ctls, s.startController("ctl-2", "--webhook-listen="))

	readiness := execProbeSpec(s.period, 1, "true")
	for _, p := range []struct {
		node *clusterNode
		name string
	}{{s.a, "a1"}, {s.a, "a2"}, {s.b, "b1"}, {s.x, "c1"}} {
		p.node.create(p.node.apiPod(p.name, shell("sleep 3600"), probespec.ContainerProbes{Readiness: readiness}, true))
	}
	for _, name := range []string{"a1", "a2", "b1"} {
		s.a.waitConditions(name, corev1.ConditionTrue, 60*time.Second)
	}

	// 1. C has no probelet: its pod says so after the grace period.
	s.waitMarked("c1", probespec.ReasonProbeletNotRunning, started.Add(safetyGrace+10*time.Second))
	t.Logf("c1 marked %s %v after the controller started", probespec.ReasonProbeletNotRunning, time.Since(started).Round(time.Second))

	// 2. A restart within the grace period is no silence.
	down := time.Now()
	s.a.d.kill()
	time.Sleep(safetyGrace / 4) // the outage, a quarter of the grace period
	s.a.d.start()
	t.Logf("probelet on A down for %v", time.Since(down).Round(100*time.Millisecond))
	during(t, time.Until(down.Add(safetyGrace+monitorPeriod+5*time.Second)), "A's pods True through a restart within the grace period",
		s.gatesAre(corev1.ConditionTrue, "a1", "a2", "b1"))

	// 3. Killed and kept down: A's pods are marked, B's are not.
	down = time.Now()
	s.a.d.kill()
	for _, name := range []string{"a1", "a2"} {
		s.waitMarked(name, probespec.ReasonProbeletUnavailable, down.Add(safetyGrace+10*time.Second))
	}
	t.Logf("A's pods marked %s %v after probelet was killed", probespec.ReasonProbeletUnavailable, time.Since(down).Round(time.Second))
	if ok, state := s.gatesAre(corev1.ConditionTrue, "b1")(); !ok {
		t.Fatalf("B's pod touched: %s", state)
	}
	for _, name := range []string{"a1", "a2", "c1"} {
		eventually(t, 30*time.Second, "the controller's Event on "+name, func() (bool, string) {
			n := s.markEvents(ctx, name)
			return n == 1, fmt.Sprintf("%d marking Events", n)
		})
	}
	if n := s.markEvents(ctx, "b1"); n != 0 {
		t.Fatalf("%d marking Events on b1, want none", n)
	}
	s.controllerRightsEndAtMarking(ctx)

	// 4. The leader dies; the other replica leads and writes nothing twice.
	killed := time.Now()
	leader.kill()
	next := s.waitLeader(s.ctls[1], leaderTakeover)
	t.Logf("ctl-2 leads %v after the leader was killed", time.Since(killed).Round(100*time.Millisecond))
	// A new leader gives every node the whole grace period; then A is
	// silent again in its eyes, and its pods are already marked.
	during(t, safetyGrace+monitorPeriod+5*time.Second, "the new leader marking nothing: every silent node's pods are marked already",
		func() (bool, string) {
			n := next.sum("probelet_controller_pods_marked_total")
			return n == 0, fmt.Sprintf("it marked %v pods", n)
		})
	for _, name := range []string{"a1", "a2", "c1"} {
		if n := s.markEvents(ctx, name); n != 1 {
			t.Fatalf("%s: %d marking Events across two leaders, want 1", name, n)
		}
	}

	// 5. probelet on A is back: its own verdict replaces the marks.
	back := time.Now()
	s.a.d.start()
	for _, name := range []string{"a1", "a2"} {
		s.waitGateTrueAfterFirstProbe(name, back)
	}

	// 6. Both probelets stopped: every zone fully disrupted, nothing marked.
	down = time.Now()
	s.a.d.stop()
	s.b.d.stop()
	during(t, time.Until(down.Add(safetyGrace+monitorPeriod+10*time.Second)), "every pod True with every probelet silent",
		s.gatesAre(corev1.ConditionTrue, "a1", "a2", "b1"))
	for _, n := range []*clusterNode{s.a, s.b} {
		eventually(t, 30*time.Second, "the held-back Event on node "+n.k.NodeName(), func() (bool, string) {
			evs := s.nodeEvents(ctx, n.k.NodeName(), probespec.EventMarkingHeldBack)
			ok := len(evs) > 0 && strings.Contains(evs[0].Message, "every zone is fully disrupted")
			return ok, fmt.Sprintf("%d Events", len(evs))
		})
	}
	if len(next.logsMatching("Holding back")) == 0 {
		t.Error("the leader's log does not say why it holds back")
	}
}

func startSafetyNet(t *testing.T) *safetyNet {
	t.Helper()
	c := cluster.Start(t)
	s := &safetyNet{t: t, c: c, period: 2}
	s.a = joinNode(t, c)
	s.a.applyDeployRights()
	for _, f := range []string{"serviceaccount.yaml", "rbac.yaml", "admission-policy.yaml"} {
		if out, err := c.Kubectl("apply", "-n", "probelet-system", "-f", filepath.Join(repoRoot(), "deploy", "controller", f)); err != nil {
			t.Fatalf("kubectl apply controller/%s: %v\n%s", f, err, out)
		}
	}
	s.b = joinNode(t, c)
	s.x = joinNode(t, c)
	s.a.startProbelet()
	s.b.startProbelet()
	return s
}

// startController runs a probelet-controller replica with its own service
// account's rights (deploy/controller) and the default timings.
func (s *safetyNet) startController(name string, extra ...string) *daemon {
	s.t.Helper()
	kubeconfig, err := s.c.ServiceAccountKubeconfig(context.Background(), "probelet-system", "probelet-controller", time.Hour)
	if err != nil {
		s.t.Fatal(err)
	}
	d := &daemon{t: s.t, bed: s.a.bed, name: name, bin: bins.controller,
		args: append([]string{"--kubeconfig", kubeconfig, "--metrics-bind-address", "127.0.0.1:0"}, extra...)}
	s.t.Cleanup(d.cleanup)
	d.start()
	return d
}

// controllerRightsEndAtMarking: with the controller's own token (a
// compromised replica), every status write but a mark is refused by
// deploy/controller's admission policy: putting a pod back in its
// Services, marking with another reason, touching the kubelet's
// conditions or a pod's labels. The victim b1 stays True throughout.
func (s *safetyNet) controllerRightsEndAtMarking(ctx context.Context) {
	s.t.Helper()
	cfg, err := s.c.ServiceAccountConfig(ctx, "probelet-system", "probelet-controller", time.Hour)
	if err != nil {
		s.t.Fatal(err)
	}
	as, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		s.t.Fatal(err)
	}
	for _, w := range []struct{ what, pod, body string }{
		{"a marked pod back to True", "a1", `{"status":{"conditions":[{"type":"probelet.io/ready","status":"True"}]}}`},
		{"a mark with another reason", "b1", `{"status":{"conditions":[{"type":"probelet.io/ready","status":"False","reason":"Drained"}]}}`},
		{"the kubelet's Ready condition", "b1", `{"status":{"conditions":[{"type":"Ready","status":"False","reason":"ProbeletUnavailable"}]}}`},
		{"a label beside a mark", "b1", `{"metadata":{"labels":{"app":"elsewhere"}},"status":{"conditions":[{"type":"probelet.io/ready","status":"False","reason":"ProbeletUnavailable"}]}}`},
	} {
		if err := patchStatus(ctx, as, w.pod, []byte(w.body)); !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
			s.t.Errorf("probelet-controller's token writing %s: %v, want Forbidden", w.what, err)
		}
	}
	if ok, state := s.gatesAre(corev1.ConditionTrue, "b1")(); !ok {
		s.t.Fatalf("the victim b1 was touched: %s", state)
	}
	if ok, state := s.gatesAre(corev1.ConditionFalse, "a1")(); !ok {
		s.t.Fatalf("a1's mark was undone: %s", state)
	}
}

// waitLeader waits until d leads: its log says so and the leader Lease
// names it.
func (s *safetyNet) waitLeader(d *daemon, timeout time.Duration) *daemon {
	s.t.Helper()
	eventually(s.t, timeout, d.name+" to lead", func() (bool, string) {
		id := d.logField("Leading", "identity")
		if id == "" {
			return false, "not leading"
		}
		l, err := s.c.Client().CoordinationV1().Leases("probelet-system").Get(context.Background(), "probelet-controller", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		holder := ""
		if l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		return holder == id, fmt.Sprintf("holder %q, %s is %q", holder, d.name, id)
	})
	return d
}

// gatesAre checks that each named pod's probelet.io/ready is want.
func (s *safetyNet) gatesAre(want corev1.ConditionStatus, names ...string) func() (bool, string) {
	return func() (bool, string) {
		for _, name := range names {
			c, _ := condition(s.a.pod(name), readyGate)
			if c.Status != want {
				return false, fmt.Sprintf("%s: %+v", name, c)
			}
		}
		return true, ""
	}
}

// waitMarked waits until the pod's gate is False with reason, by deadline.
func (s *safetyNet) waitMarked(name, reason string, deadline time.Time) {
	s.t.Helper()
	eventually(s.t, time.Until(deadline), name+" marked "+reason, func() (bool, string) {
		c, _ := condition(s.a.pod(name), readyGate)
		return c.Status == corev1.ConditionFalse && c.Reason == reason, fmt.Sprintf("%+v", c)
	})
}

// waitGateTrueAfterFirstProbe waits for the pod's gate to be True and
// checks it came within 2 readiness periods of the first probe its node's
// probelet ran since since.
func (s *safetyNet) waitGateTrueAfterFirstProbe(name string, since time.Time) {
	s.t.Helper()
	up := eventually(s.t, 60*time.Second, name+" True again", s.gatesAre(corev1.ConditionTrue, name))
	id := s.a.containerID(name)
	var first time.Time
	for _, r := range s.a.d.describe(id).Probes["readiness"].History {
		if r.Time.After(since) && (first.IsZero() || r.Time.Before(first)) {
			first = r.Time
		}
	}
	if first.IsZero() {
		s.t.Fatalf("%s: no readiness probe since probelet came back, yet True", name)
	}
	budget := 2 * time.Duration(s.period) * time.Second
	if took := up.Sub(first); took > budget {
		s.t.Fatalf("%s True %v after probelet's first probe, want within 2 periods (%v)", name, took, budget)
	}
	s.t.Logf("%s True %v after probelet's first probe since its return", name, up.Sub(first).Round(10*time.Millisecond))
}

// markEvents counts the controller's marking Events on the pod, adding up
// each Event's count (the recorder folds repeats into one).
func (s *safetyNet) markEvents(ctx context.Context, pod string) int {
	s.t.Helper()
	evs, err := s.c.Client().CoreV1().Events("default").List(ctx, metav1.ListOptions{
		FieldSelector: fields.Set{"involvedObject.name": pod, "source": "probelet-controller"}.String()})
	if err != nil {
		s.t.Fatal(err)
	}
	n := 0
	for _, e := range evs.Items {
		if e.Reason == probespec.ReasonProbeletUnavailable || e.Reason == probespec.ReasonProbeletNotRunning {
			n += int(max(e.Count, 1))
		}
	}
	return n
}

// nodeEvents lists the Events of reason on the named Node.
func (s *safetyNet) nodeEvents(ctx context.Context, node, reason string) []corev1.Event {
	s.t.Helper()
	evs, err := s.c.Client().CoreV1().Events("default").List(ctx, metav1.ListOptions{
		FieldSelector: fields.Set{"involvedObject.kind": "Node", "involvedObject.name": node, "reason": reason}.String()})
	if err != nil {
		s.t.Fatal(err)
	}
	return evs.Items
}
