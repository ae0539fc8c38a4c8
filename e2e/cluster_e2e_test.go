//go:build e2e

package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/probelet/probelet/internal/cluster"
	"github.com/probelet/probelet/internal/testbed"
	"github.com/probelet/probelet/probespec"
)

// readyGate is the readiness gate probelet owns.
const readyGate corev1.PodConditionType = "probelet.io/ready"

// clusterNode is a real control plane, a kubelet registered to it on a
// containerd test bed, and probelet on that node talking to the API server
// as the DaemonSet does: its service account with deploy/'s RBAC and
// admission policy, a token bound to the node.
type clusterNode struct {
	t          *testing.T
	c          *cluster.Cluster
	bed        *testbed.Bed
	k          *cluster.Kubelet
	d          *daemon
	kubeconfig string // probelet's
	admin      kubernetes.Interface
}

func startClusterNode(t *testing.T, extra ...string) *clusterNode {
	t.Helper()
	n := joinNode(t, cluster.Start(t))
	n.applyDeployRights()
	n.startProbelet(extra...)
	return n
}

// joinNode adds a node to the cluster c: a containerd test bed and a
// kubelet registered to c, without probelet.
func joinNode(t *testing.T, c *cluster.Cluster) *clusterNode {
	t.Helper()
	n := &clusterNode{t: t, c: c, admin: c.Client()}
	n.bed = testbed.Start(t)
	n.k = c.StartKubelet(t, n.bed)
	return n
}

// startProbelet runs probelet on the node as the DaemonSet does, with its
// service account's token bound to the node (deploy/'s rights applied).
func (n *clusterNode) startProbelet(extra ...string) {
	n.t.Helper()
	n.kubeconfig = n.tokenFor(n.k.NodeName())
	n.d = startProbelet(n.t, n.bed, append([]string{"--kubeconfig", n.kubeconfig, "--node-name", n.k.NodeName()}, extra...)...)
}

// applyDeployRights applies deploy/base's namespace, service account, RBAC
// and admission policy (not the DaemonSet: probelet runs as a process).
func (n *clusterNode) applyDeployRights() {
	n.t.Helper()
	base := filepath.Join(repoRoot(), "deploy", "base")
	for _, f := range []string{"namespace.yaml", "serviceaccount.yaml", "rbac.yaml", "admission-policy.yaml",
		"lease-rbac.yaml", "lease-admission-policy.yaml"} {
		if out, err := n.c.Kubectl("apply", "-f", filepath.Join(base, f)); err != nil {
			n.t.Fatalf("kubectl apply %s: %v\n%s", f, err, out)
		}
	}
}

// tokenFor writes a kubeconfig for probelet's service account with a token
// bound to the Node nodeName, as the DaemonSet pod's token names its node.
func (n *clusterNode) tokenFor(nodeName string) string {
	n.t.Helper()
	ctx := context.Background()
	node, err := n.admin.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
	if err != nil {
		n.t.Fatal(err)
	}
	path, err := n.c.ServiceAccountKubeconfigBound(ctx, "probelet-system", "probelet", time.Hour,
		&authenticationv1.BoundObjectReference{Kind: "Node", APIVersion: "v1", Name: node.Name, UID: node.UID})
	if err != nil {
		n.t.Fatal(err)
	}
	return path
}

// apiPod is a busybox pod on the node with probelet's probes for its one
// container "app" (port "http" 8080), optionally with the readiness gate.
func (n *clusterNode) apiPod(name string, cmd []string, probes probespec.ContainerProbes, gate bool) *corev1.Pod {
	anno, err := jsonString(probespec.PodProbes{"app": probes})
	if err != nil {
		n.t.Fatal(err)
	}
	grace := int64(2)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: map[string]string{"app": name},
			Annotations: map[string]string{probespec.AnnotationProbes: anno}},
		Spec: corev1.PodSpec{
			NodeName:                      n.k.NodeName(),
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{Name: "app", Image: testbed.BusyboxImage, ImagePullPolicy: corev1.PullNever,
				Command: cmd, Ports: httpPort}},
		},
	}
	if gate {
		p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: readyGate}}
	}
	return p
}

func (n *clusterNode) create(p *corev1.Pod) {
	n.t.Helper()
	if _, err := n.admin.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		n.t.Fatal(err)
	}
}

func (n *clusterNode) pod(name string) *corev1.Pod {
	n.t.Helper()
	p, err := n.admin.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		n.t.Fatal(err)
	}
	return p
}

// containerID is the runtime's ID of the pod's container, once it runs.
func (n *clusterNode) containerID(name string) string {
	n.t.Helper()
	return n.containerIDIn("default", name)
}

// containerIDIn is containerID for a pod of namespace ns.
func (n *clusterNode) containerIDIn(ns, name string) string {
	n.t.Helper()
	var id string
	eventually(n.t, 60*time.Second, "pod "+ns+"/"+name+" to run", func() (bool, string) {
		p, err := n.admin.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running != nil {
				_, id, _ = strings.Cut(cs.ContainerID, "://")
				return true, ""
			}
		}
		return false, fmt.Sprintf("phase %s, statuses %+v", p.Status.Phase, p.Status.ContainerStatuses)
	})
	return id
}

// condition is the pod's condition of type t.
func condition(p *corev1.Pod, t corev1.PodConditionType) (corev1.PodCondition, bool) {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c, true
		}
	}
	return corev1.PodCondition{}, false
}

// waitConditions waits until the pod's gate condition and Ready are want.
func (n *clusterNode) waitConditions(name string, want corev1.ConditionStatus, timeout time.Duration) time.Time {
	n.t.Helper()
	return eventually(n.t, timeout, fmt.Sprintf("pod %s: %s and Ready %s", name, readyGate, want), func() (bool, string) {
		p := n.pod(name)
		gate, _ := condition(p, readyGate)
		ready, _ := condition(p, corev1.PodReady)
		return gate.Status == want && ready.Status == want, fmt.Sprintf("gate %+v, Ready %+v", gate, ready)
	})
}

// endpointReady reports the ready flag of the pod's endpoint in the
// Service's EndpointSlices.
func (n *clusterNode) endpointReady(service, podName string) (ready, found bool) {
	n.t.Helper()
	slices, err := n.admin.DiscoveryV1().EndpointSlices("default").List(context.Background(),
		metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=" + service})
	if err != nil {
		n.t.Fatal(err)
	}
	for _, s := range slices.Items {
		for _, e := range s.Endpoints {
			if e.TargetRef != nil && e.TargetRef.Name == podName {
				return e.Conditions.Ready != nil && *e.Conditions.Ready, true
			}
		}
	}
	return false, false
}

func execProbeSpec(period, failures int32, cmd ...string) *corev1.Probe {
	p := execProbe(period, failures, cmd...)
	p.TimeoutSeconds = 1
	return p
}

// TestClusterReadinessGateAndEvents: (a) a pod with probelet's readiness
// gate becomes Ready only after probelet's readiness succeeds and goes
// NotReady within one period (+ the API's latency) when it fails, its
// EndpointSlice endpoint following; (b) a liveness restart shows probelet's
// Unhealthy and Killing events through the API, on the container's field path.
func TestClusterReadinessGateAndEvents(t *testing.T) {
	t.Parallel()
	n := startClusterNode(t)
	ctx := context.Background()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromString("http")}}}}
	if _, err := n.admin.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	readiness := execProbeSpec(1, 1, "test", "-f", "/tmp/ready")
	n.create(n.apiPod("web", shell("sleep 3600"), probespec.ContainerProbes{Readiness: readiness}, true))
	id := n.containerID("web")

	// Not ready until probelet says so, although the kubelet sees the
	// container ready (it has no probe of its own).
	n.waitConditions("web", corev1.ConditionFalse, 30*time.Second)
	if c, _ := condition(n.pod("web"), corev1.ContainersReady); c.Status != corev1.ConditionTrue {
		t.Fatalf("ContainersReady = %+v, want True (the gate alone holds the pod back)", c)
	}
	gate, _ := condition(n.pod("web"), readyGate)
	if gate.Reason == "" || !strings.Contains(gate.Message, "container app") {
		t.Errorf("False condition %+v should name the container and probe", gate)
	}

	mark := time.Now()
	mustExec(t, n.bed, id, "touch", "/tmp/ready")
	up := n.waitConditions("web", corev1.ConditionTrue, 30*time.Second)
	eventually(t, 30*time.Second, "the endpoint to turn ready", func() (bool, string) {
		ready, found := n.endpointReady("web", "web")
		return ready, fmt.Sprintf("found %v ready %v", found, ready)
	})
	t.Logf("ready: pod Ready %v after the app became ready", up.Sub(mark).Round(time.Millisecond))

	mark = time.Now()
	mustExec(t, n.bed, id, "rm", "/tmp/ready")
	// One period and one probe timeout to notice, and time for the write
	// and the kubelet's Ready update through the API server.
	budget := time.Duration(readiness.PeriodSeconds*readiness.FailureThreshold+readiness.TimeoutSeconds)*time.Second + 2*time.Second
	down := n.waitConditions("web", corev1.ConditionFalse, budget)
	eventually(t, 30*time.Second, "the endpoint to turn not ready", func() (bool, string) {
		ready, found := n.endpointReady("web", "web")
		return found && !ready, fmt.Sprintf("found %v ready %v", found, ready)
	})
	t.Logf("not ready: pod NotReady %v after the app stopped being ready (budget %v)", down.Sub(mark).Round(time.Millisecond), budget)

	checkLivenessEvents(t, n)
}

// checkLivenessEvents: a failed liveness probe is an Unhealthy and a
// Killing Event on the pod, on spec.containers{app}, from probelet.
func checkLivenessEvents(t *testing.T, n *clusterNode) {
	live := execProbeSpec(1, 1, "test", "-f", "/tmp/alive")
	n.create(n.apiPod("live", shell("touch /tmp/alive; sleep 3600"), probespec.ContainerProbes{Liveness: live}, false))
	id := n.containerID("live")
	mustExec(t, n.bed, id, "rm", "/tmp/alive")
	eventually(t, 60*time.Second, "Unhealthy and Killing events and the kubelet's restart", func() (bool, string) {
		evs, err := n.admin.CoreV1().Events("default").List(context.Background(),
			metav1.ListOptions{FieldSelector: "involvedObject.name=live"})
		if err != nil {
			t.Fatal(err)
		}
		reasons := map[string]corev1.Event{}
		for _, e := range evs.Items {
			if e.Source.Component == "probelet" {
				reasons[e.Reason] = e
			}
		}
		restarts := int32(0)
		if cs := n.pod("live").Status.ContainerStatuses; len(cs) > 0 {
			restarts = cs[0].RestartCount
		}
		u, k := reasons["Unhealthy"], reasons["Killing"]
		ok := u.Type == "Warning" && strings.HasPrefix(u.Message, "Liveness probe failed") &&
			k.Type == "Normal" && k.Message == "Container app failed liveness probe, will be restarted" &&
			u.InvolvedObject.FieldPath == "spec.containers{app}" && k.InvolvedObject.FieldPath == "spec.containers{app}" &&
			restarts >= 1
		return ok, fmt.Sprintf("probelet events %v, restarts %d", reasons, restarts)
	})
}

// TestClusterDeletionAndRestartPolicy: (c) liveness stops when the API
// server records the pod's deletion, before the sandbox is stopped, so a
// container ignoring SIGTERM is not killed for failing liveness during its
// grace period; (d) with restartPolicy Never a terminated container's
// probe workers stop.
func TestClusterDeletionAndRestartPolicy(t *testing.T) {
	t.Parallel()
	n := startClusterNode(t)
	ctx := context.Background()

	live := execProbeSpec(1, 1, "test", "-f", "/tmp/alive")
	p := n.apiPod("stubborn", shell("trap '' TERM; touch /tmp/alive; while true; do sleep 1; done"),
		probespec.ContainerProbes{Liveness: live}, false)
	grace := int64(60)
	p.Spec.TerminationGracePeriodSeconds = &grace
	n.create(p)
	id := n.containerID("stubborn")
	waitProbe(t, n.d, app{ctr: id}, "liveness", "Success")
	if err := n.admin.CoreV1().Pods("default").Delete(ctx, "stubborn", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the liveness worker to stop at the deletion request", func() (bool, string) {
		v := n.d.describe(id)
		_, live := v.Probes["liveness"]
		return !live, fmt.Sprintf("probes %v", v.Probes)
	})
	if st, err := n.bed.ContainerState(id); err != nil || st.State != testbed.StateRunning {
		t.Fatalf("container %s: %+v, %v; the test needs it running through its grace period", id, st, err)
	}
	mustExec(t, n.bed, id, "rm", "/tmp/alive")
	during(t, 3*time.Duration(live.PeriodSeconds)*time.Second, "no kill during the deletion", func() (bool, string) {
		v := n.d.describe(id)
		return len(v.Restarts) == 0, fmt.Sprintf("restarts %+v", v.Restarts)
	})
	if kills := n.d.logsMatching("Killing container"); len(kills) > 0 {
		t.Errorf("probelet killed during the deletion: %v", kills)
	}
	zero := int64(0)
	_ = n.admin.CoreV1().Pods("default").Delete(ctx, "stubborn", metav1.DeleteOptions{GracePeriodSeconds: &zero})

	once := n.apiPod("once", shell("sleep 4; exit 1"), probespec.ContainerProbes{Readiness: execProbeSpec(1, 3, "true")}, false)
	once.Spec.RestartPolicy = corev1.RestartPolicyNever
	n.create(once)
	onceID := n.containerID("once")
	waitProbe(t, n.d, app{ctr: onceID}, "readiness", "Success")
	eventually(t, 30*time.Second, "the readiness worker to stop after the exit", func() (bool, string) {
		v := n.d.describe(onceID)
		_, probed := v.Probes["readiness"]
		return v.State == testbed.StateExited && !probed, fmt.Sprintf("state %s, probes %v", v.State, v.Probes)
	})
}

// TestClusterAPIServerOutage: (e) with the API server stopped for 60 s
// probing goes on, nothing is killed because of it, and the readiness
// condition is right within 5 s of its return.
func TestClusterAPIServerOutage(t *testing.T) {
	t.Parallel()
	n := startClusterNode(t)
	live := execProbeSpec(1, 3, "true")
	readiness := execProbeSpec(1, 1, "test", "-f", "/tmp/ready")
	n.create(n.apiPod("web", shell("touch /tmp/ready; sleep 3600"), probespec.ContainerProbes{Liveness: live, Readiness: readiness}, true))
	id := n.containerID("web")
	n.waitConditions("web", corev1.ConditionTrue, 30*time.Second)

	if err := n.c.StopComponent("kube-apiserver"); err != nil {
		t.Fatal(err)
	}
	down := time.Now()
	mustExec(t, n.bed, id, "rm", "/tmp/ready")
	waitReady(t, n.d, app{ctr: id}, false, "")
	// The rest of the outage: probing goes on, nothing is killed.
	during(t, time.Until(down.Add(60*time.Second)), "probing without the API server", func() (bool, string) {
		v := n.d.describe(id)
		return len(v.Restarts) == 0 && v.State == testbed.StateRunning && v.Probes["liveness"].Result == "Success",
			fmt.Sprintf("state %s, restarts %v, liveness %+v", v.State, v.Restarts, v.Probes["liveness"])
	})
	if err := n.c.StartMissing(); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	right := eventually(t, 5*time.Second, "the condition False within 5 s of the API server's return", func() (bool, string) {
		p, err := n.admin.CoreV1().Pods("default").Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		c, _ := condition(p, readyGate)
		return c.Status == corev1.ConditionFalse, fmt.Sprintf("%+v", c)
	})
	t.Logf("condition right %v after the API server answered again (outage %v)",
		right.Sub(back).Round(time.Millisecond), back.Sub(down).Round(time.Second))
	if kills := n.d.logsMatching("Killing container"); len(kills) > 0 {
		t.Errorf("a kill during the outage: %v", kills)
	}
}

// TestClusterRights: (f) probelet's service account with a token for node
// A may write its condition on node A's pods and nothing else: not on node
// B's pods, not the kubelet's or any other condition, not the pod's IPs,
// phase or container statuses, not metadata through pods/status, not pod
// specs, not deletes.
func TestClusterRights(t *testing.T) {
	t.Parallel()
	n := startClusterNode(t)
	ctx := context.Background()
	// Node B exists as an object only; its pod never runs.
	nodeB := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}}
	if _, err := n.admin.CoreV1().Nodes().Create(ctx, nodeB, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mine := n.apiPod("mine", shell("sleep 3600"), probespec.ContainerProbes{}, true)
	theirs := n.apiPod("theirs", shell("sleep 3600"), probespec.ContainerProbes{}, true)
	theirs.Spec.NodeName = "node-b"
	n.create(mine)
	n.create(theirs)
	n.containerID("mine")

	cfg, err := clientcmd.BuildConfigFromFlags("", n.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	as, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The reason is one no writer uses, so every patch is a real change:
	// a patch equal to what the kubelet wrote in the same second (status
	// and lastTransitionTime) changes nothing and is rightly let through.
	cond := func(t corev1.PodConditionType) []byte {
		return []byte(fmt.Sprintf(`{"status":{"conditions":[{"type":%q,"status":"True","reason":"RightsTest","lastTransitionTime":%q}]}}`,
			t, time.Now().UTC().Format(time.RFC3339)))
	}
	// The API server loads a new policy a few seconds after it is created;
	// a dry run shows when it is in force.
	eventually(t, 30*time.Second, "the admission policy to be in force", func() (bool, string) {
		_, err := as.CoreV1().Pods("default").Patch(ctx, "theirs", "application/strategic-merge-patch+json", cond(readyGate),
			metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}, "status")
		return apierrors.IsForbidden(err), fmt.Sprint(err)
	})
	// Status writes the API server itself would accept, so that only the
	// policy can refuse them. podIPs merge by IP: the list is replaced, or
	// a second IPv4 address would be invalid.
	const newIPs = `"podIP":"10.254.0.9","podIPs":[{"ip":"10.254.0.9"},{"$patch":"replace"}]`
	status := func(fields string) func() error {
		return func() error { return patchStatus(ctx, as, "mine", []byte(`{"status":{`+fields+`}}`)) }
	}
	restarted := func() error {
		cs := n.pod("mine").Status.ContainerStatuses
		if len(cs) != 1 {
			return fmt.Errorf("container statuses %+v", cs)
		}
		cs[0].RestartCount += 40
		body, err := json.Marshal(map[string]any{"status": map[string]any{"containerStatuses": cs}})
		if err != nil {
			return err
		}
		return patchStatus(ctx, as, "mine", body)
	}
	for _, tc := range []struct {
		name    string
		do      func() error
		allowed bool
		policy  bool // refused by the admission policy itself, not another check
	}{
		{"its condition on its node's pod", func() error { return patchStatus(ctx, as, "mine", cond(readyGate)) }, true, false},
		{"its condition on node B's pod", func() error { return patchStatus(ctx, as, "theirs", cond(readyGate)) }, false, true},
		{"the kubelet's Ready on its node's pod", func() error { return patchStatus(ctx, as, "mine", cond(corev1.PodReady)) }, false, true},
		{"another condition type on its node's pod", func() error { return patchStatus(ctx, as, "mine", cond("example.com/other")) }, false, true},
		{"status.podIPs of its node's pod", status(newIPs), false, true},
		{"status.phase of its node's pod", status(`"phase":"Failed"`), false, true},
		{"container statuses of its node's pod", restarted, false, true},
		{"its condition with podIPs in one write", status(fmt.Sprintf(`"conditions":[{"type":%q,"status":"True","reason":"RightsTest"}],%s`, readyGate, newIPs)), false, true},
		{"labels through pods/status", func() error {
			return patchStatus(ctx, as, "mine", []byte(`{"metadata":{"labels":{"hacked":"yes"}}}`))
		}, false, true},
		{"annotations through pods/status", func() error {
			return patchStatus(ctx, as, "mine", []byte(`{"metadata":{"annotations":{"probelet.io/probes":"{}"}}}`))
		}, false, true},
		{"finalizers through pods/status", func() error {
			return patchStatus(ctx, as, "mine", []byte(`{"metadata":{"finalizers":["example.com/hold"]}}`))
		}, false, true},
		{"its condition again, after the refusals", func() error { return patchStatus(ctx, as, "mine", cond(readyGate)) }, true, false},
		{"a pod's labels", func() error {
			_, err := as.CoreV1().Pods("default").Patch(ctx, "mine", "application/strategic-merge-patch+json",
				[]byte(`{"metadata":{"labels":{"hacked":"yes"}}}`), metav1.PatchOptions{})
			return err
		}, false, false},
		{"deleting a pod", func() error { return as.CoreV1().Pods("default").Delete(ctx, "mine", metav1.DeleteOptions{}) }, false, false},
		{"reading secrets", func() error {
			_, err := as.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
			return err
		}, false, false},
	} {
		err := tc.do()
		switch {
		case tc.allowed && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.policy && (!apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "probelet-own-node-pod-status")):
			t.Errorf("%s: %v, want Forbidden by the admission policy", tc.name, err)
		case !tc.allowed && !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err):
			t.Errorf("%s: %v, want Forbidden", tc.name, err)
		case !tc.allowed:
			t.Logf("%s: refused: %v", tc.name, err)
		}
	}
	// The refused writes left nothing behind.
	p := n.pod("mine")
	if len(p.Status.PodIPs) > 0 && p.Status.PodIPs[0].IP == "10.254.0.9" || p.Status.Phase == corev1.PodFailed ||
		p.Labels["hacked"] != "" || len(p.Finalizers) > 0 {
		t.Errorf("a refused write changed the pod: %+v %+v", p.ObjectMeta, p.Status)
	}
}

// TestClusterNodeLease: probelet keeps its node Lease in probelet-system
// with deploy/'s rights (the Role and the admission policy), owned by the
// Node and renewed every --lease-renew-interval, four of them its
// duration; the same token cannot write another node's Lease.
func TestClusterNodeLease(t *testing.T) {
	t.Parallel()
	const every = 3 * time.Second
	n := startClusterNode(t, "--lease-renew-interval="+every.String())
	ctx := context.Background()
	node, err := n.admin.CoreV1().Nodes().Get(ctx, n.k.NodeName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	leases := n.admin.CoordinationV1().Leases("probelet-system")
	var first time.Time
	eventually(t, 60*time.Second, "probelet's node Lease", func() (bool, string) {
		l, err := leases.Get(ctx, node.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if l.Spec.RenewTime != nil && first.IsZero() {
			first = l.Spec.RenewTime.Time
		}
		owned := len(l.OwnerReferences) == 1 && l.OwnerReferences[0].UID == node.UID && l.OwnerReferences[0].Kind == "Node"
		ok := owned && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity == node.Name &&
			l.Spec.LeaseDurationSeconds != nil && *l.Spec.LeaseDurationSeconds == int32(4*every/time.Second) &&
			l.Spec.RenewTime != nil && l.Spec.RenewTime.After(first) &&
			// --tcp-mode auto, as root on this kernel: the short-circuit
			// loads, and the Lease says so for the whole cluster to see.
			l.Labels[probespec.LabelTCPMode] == "ebpf" && l.Annotations[probespec.AnnotationTCPModeReason] == ""
		return ok, fmt.Sprintf("%+v %+v %v %v", l.ObjectMeta.OwnerReferences, l.Spec, l.Labels, l.Annotations)
	})

	cfg, err := clientcmd.BuildConfigFromFlags("", n.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	as, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	holder := "node-b"
	other := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "node-b", Namespace: "probelet-system"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}
	if _, err := as.CoordinationV1().Leases("probelet-system").Create(ctx, other, metav1.CreateOptions{}); !apierrors.IsForbidden(err) && !apierrors.IsInvalid(err) {
		t.Errorf("creating node-b's Lease with node %s's token: %v, want Forbidden", node.Name, err)
	}
	if _, err := as.CoordinationV1().Leases("default").Get(ctx, node.Name, metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("reading a Lease in default: %v, want Forbidden", err)
	}

	// Nobody else keeps the node's heartbeat alive: an identity given
	// every Lease right in probelet-system (an operator's tool, a
	// compromised controller) is refused by deploy/'s policy, and so is
	// the cluster's admin; probelet's own renewals go on.
	intruder := n.leaseWriter("lease-intruder")
	l, err := leases.Get(ctx, node.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for who, client := range map[string]kubernetes.Interface{"another service account": intruder, "the admin": n.admin} {
		renewed := l.DeepCopy()
		renewed.Spec.RenewTime = &metav1.MicroTime{Time: time.Now().Add(time.Hour)}
		_, err := client.CoordinationV1().Leases("probelet-system").Update(ctx, renewed, metav1.UpdateOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "may not write "+node.Name) {
			t.Errorf("%s renewing node %s's Lease: %v, want Forbidden by probelet-lease-writers", who, node.Name, err)
		}
		fake := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "ghost-node", Namespace: "probelet-system"},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr("ghost-node")}}
		if _, err := client.CoordinationV1().Leases("probelet-system").Create(ctx, fake, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
			t.Errorf("%s creating a node Lease: %v, want Forbidden", who, err)
		}
	}
	// A Lease outside probelet-system is none of the policy's business.
	elsewhere := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "anything", Namespace: "default"}}
	if _, err := n.admin.CoordinationV1().Leases("default").Create(ctx, elsewhere, metav1.CreateOptions{}); err != nil {
		t.Errorf("the admin creating a Lease in default: %v", err)
	}
	// Two renewals in a row, the renew interval apart: the next is due an
	// interval after the last one's write, well before the default 10 s.
	var renewals []time.Time
	eventually(t, 30*time.Second, "probelet's next two renewals", func() (bool, string) {
		l, err := leases.Get(ctx, node.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if at := l.Spec.RenewTime.Time; len(renewals) == 0 || at.After(renewals[len(renewals)-1]) {
			renewals = append(renewals, at)
		}
		return len(renewals) >= 3, fmt.Sprint(renewals)
	})
	if gap := renewals[2].Sub(renewals[1]); gap < every-10*time.Millisecond || gap >= probespec.LeaseRenewInterval {
		t.Errorf("renewals %v apart with --lease-renew-interval %v", gap, every)
	}
}

// leaseWriter is a client for a new service account of probelet-system
// that RBAC lets create and update every Lease there.
func (n *clusterNode) leaseWriter(name string) kubernetes.Interface {
	n.t.Helper()
	ctx := context.Background()
	ns := "probelet-system"
	if _, err := n.admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		n.t.Fatal(err)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}}}}
	if _, err := n.admin.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		n.t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: ns}}}
	if _, err := n.admin.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		n.t.Fatal(err)
	}
	path, err := n.c.ServiceAccountKubeconfig(ctx, ns, name, time.Hour)
	if err != nil {
		n.t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		n.t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		n.t.Fatal(err)
	}
	return cs
}

func patchStatus(ctx context.Context, client kubernetes.Interface, pod string, body []byte) error {
	_, err := client.CoreV1().Pods("default").Patch(ctx, pod, "application/strategic-merge-patch+json", body,
		metav1.PatchOptions{}, "status")
	return err
}
