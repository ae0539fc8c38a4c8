//go:build e2e

package e2e_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/probelet/probelet/internal/cluster"
	"github.com/probelet/probelet/internal/testbed"
	"github.com/probelet/probelet/probespec"
)

const (
	agentNamespace = "probelet-system"
	agentLabel     = "app.kubernetes.io/name=probelet"
	clusterTimeout = 5 * time.Minute
)

// TestDaemonSetOnCluster runs deploy/ as users do, on the real control
// plane (internal/cluster) with a registered kubelet on a containerd test
// bed: the image `make image` builds, imported into the bed, `kubectl apply
// -k` of deploy/overlays/testbed pointed at the bed. The DaemonSet pod
// becomes Ready under the kubelet's own probes of /healthz (so hostPID,
// hostNetwork, the mounts, the capabilities and RuntimeDefault seccomp
// work), registers with the bed's containerd over NRI, probes a workload
// pod the kubelet runs (TCP by eBPF, exec through CRI), shows it in
// probectl through the host socket and, through the API server, writes the
// workload's probelet.io/ready readiness gate so the pod becomes Ready.
// `kubectl rollout restart` stops no workload container (its Ready
// condition is watched meanwhile and must never drop);
// `kubectl delete -k` leaves no socket, no container and no NRI
// registration.
//
// There is no scheduler in the test control plane: a stand-in binds the
// DaemonSet's pods to the node, as kube-scheduler would.
func TestDaemonSetOnCluster(t *testing.T) {
	t.Parallel()
	ctx, c, bed, k := agentNode(t)

	metrics := freeLocalAddr(t)
	_, portText, _ := net.SplitHostPort(metrics)
	port, _ := strconv.Atoi(portText)
	overlay := bedOverlay(t, bed.Dir(), port, strings.TrimPrefix(c.URL(), "https://"))
	logFrom := logSize(t, bed)
	if out, err := c.Kubectl("apply", "-k", overlay); err != nil {
		t.Fatal(err)
	} else {
		t.Logf("kubectl apply -k:\n%s", out)
	}
	first := waitAgentReady(ctx, t, c, "")
	waitContainerdLog(t, bed, logFrom, `plugin \"10-probelet\" connected and synchronized`)

	d, web, socket := agentProbesWorkload(ctx, t, c, bed, k, metrics)

	// A rolling restart: the new pod takes over; the workload is not killed
	// and its Ready condition never drops. What the socket shows meanwhile
	// is logged.
	watch := watchSteady(d, web.ctr)
	flaps := watchPodReady(ctx, c, "default", "web")
	if _, err := c.Kubectl("-n", agentNamespace, "rollout", "restart", "ds/probelet"); err != nil {
		t.Fatal(err)
	}
	waitAgentReady(ctx, t, c, first.UID)
	waitReady(t, d, web, true, "probelet test bed")
	checkNotRestarted(ctx, t, c, web)
	notReady, polls := watch.stop()
	t.Logf("during the rollout probectl answered %d polls; the workload was missing or not ready in %d: %q",
		polls, len(notReady), notReady[:min(3, len(notReady))])
	// The new instance leaves the condition alone until it knows the
	// container and has probed it (kube/readiness decide).
	if f := flaps(); len(f) > 0 {
		t.Errorf("the workload's Ready condition dropped during the rollout: %q", f)
	}

	logFrom = logSize(t, bed)
	if _, err := c.Kubectl("delete", "-k", overlay, "--wait"); err != nil {
		t.Fatal(err)
	}
	checkUninstalled(ctx, t, c, bed, logFrom, socket, metrics, web)
}

// agentProbesWorkload runs a workload pod (runClusterApp) beside the
// installed agent, whose metrics are on metrics, and waits until the agent
// probes it, answers for it on the host socket and has made it Ready
// through its readiness gate. It returns the agent as a daemon to poll,
// the workload and the socket's path.
func agentProbesWorkload(ctx context.Context, t *testing.T, c *cluster.Cluster, bed *testbed.Bed, k *cluster.Kubelet, metrics string) (*daemon, app, string) {
	t.Helper()
	socket := filepath.Join(bed.Dir(), "probelet-run", "probelet.sock")
	d := &daemon{t: t, bed: bed, socket: "unix://" + socket, metrics: metrics}
	web := runClusterApp(ctx, t, c, k.NodeName())
	waitReady(t, d, web, true, "probelet test bed")
	checkAnswers(t, d, web)
	// probelet writes the workload's readiness gate: the pod becomes Ready.
	if _, err := c.WaitForPod(ctx, "default", "web", func(p *corev1.Pod) bool {
		return cluster.PodCondition(p, corev1.PodReady) == corev1.ConditionTrue
	}); err != nil {
		t.Fatal(err)
	}
	return d, web, socket
}

// checkUninstalled waits until the agent's pods are gone and containerd
// saw its NRI connection close (in its log from logFrom on), and checks
// that it left nothing on the host and did not touch the workload.
func checkUninstalled(ctx context.Context, t *testing.T, c *cluster.Cluster, bed *testbed.Bed, logFrom int64, socket, metrics string, web app) {
	t.Helper()
	waitNoAgentPods(ctx, t, c)
	waitContainerdLog(t, bed, logFrom, `connection to plugin \"10-probelet\" closed`)
	checkAgentGone(t, bed, socket, metrics)
	checkNotRestarted(ctx, t, c, web)
}

// agentNode is a control plane with one kubelet on a containerd test bed
// that holds the image `make image` builds, as the agent's install tests
// need it: the bed's directory a shared mount (makeShared), and the pods
// of probelet's namespace bound to the node (bindPending) until the
// returned context, clusterTimeout, ends.
func agentNode(t *testing.T) (context.Context, *cluster.Cluster, *testbed.Bed, *cluster.Kubelet) {
	t.Helper()
	return agentNodeFor(t, clusterTimeout, nil)
}

// agentNodeFor is agentNode for a test that takes up to timeout, with the
// kubelet's options from kubelet (given the bed: its runtime endpoint may
// be a proxy in front of the bed's).
func agentNodeFor(t *testing.T, timeout time.Duration, kubelet func(*testbed.Bed) []cluster.KubeletOption) (context.Context, *cluster.Cluster, *testbed.Bed, *cluster.Kubelet) {
	t.Helper()
	archive, _ := probeletImage(t)
	c := cluster.Start(t)
	bed := testbed.Start(t)
	if err := bed.ImportImage(archive); err != nil {
		t.Fatal(err)
	}
	makeShared(t, bed.Dir())
	var opts []cluster.KubeletOption
	if kubelet != nil {
		opts = kubelet(bed)
	}
	k := c.StartKubelet(t, bed, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	go bindPending(ctx, t, c, agentNamespace, k.NodeName())
	return ctx, c, bed, k
}

// makeShared makes dir a shared mount, as / is on a systemd node: the
// agent mounts the bed's directory (its /run/containerd) with
// HostToContainer propagation, which containerd refuses below a private
// mount ("is mounted on / but it is not a shared or slave mount"), and
// this machine's / is private. The bed's down.sh unmounts it with the rest.
func makeShared(t *testing.T, dir string) {
	t.Helper()
	for _, args := range [][]string{{"--rbind", dir, dir}, {"--make-rshared", dir}} {
		if out, err := exec.Command("mount", args...).CombinedOutput(); err != nil {
			t.Fatalf("mount %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
}

// bindPending binds every pod of namespace without a node to node until
// ctx ends: the one job of kube-scheduler the DaemonSet needs here. As the
// scheduler's NodePorts filter, it leaves a pod pending while another on
// the node holds one of its host ports (the kubelet would reject it, and
// its ReplicaSet make another at once).
func bindPending(ctx context.Context, t *testing.T, c *cluster.Cluster, namespace, node string) {
	pods := c.Client().CoreV1().Pods(namespace)
	for ctx.Err() == nil {
		list, err := pods.List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName="})
		var taken map[int32]bool
		if err == nil && len(list.Items) > 0 {
			taken, err = hostPortsInUse(ctx, c, node)
		}
		if err == nil {
			for _, p := range list.Items {
				if slices.ContainsFunc(hostPorts(&p), func(port int32) bool { return taken[port] }) {
					continue
				}
				b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name, UID: p.UID},
					Target: corev1.ObjectReference{Kind: "Node", Name: node}}
				if err := pods.Bind(ctx, b, metav1.CreateOptions{}); err != nil && ctx.Err() == nil {
					t.Logf("binding %s: %v", p.Name, err)
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// hostPorts are the ports a pod takes on its node.
func hostPorts(p *corev1.Pod) []int32 {
	var out []int32
	for _, c := range p.Spec.Containers {
		for _, port := range c.Ports {
			switch {
			case port.HostPort != 0:
				out = append(out, port.HostPort)
			case p.Spec.HostNetwork:
				out = append(out, port.ContainerPort)
			}
		}
	}
	return out
}

// hostPortsInUse are the host ports of the pods bound to node that have
// not ended (one being deleted still holds its ports).
func hostPortsInUse(ctx context.Context, c *cluster.Cluster, node string) (map[int32]bool, error) {
	list, err := c.Client().CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		return nil, err
	}
	taken := map[int32]bool{}
	for _, p := range list.Items {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, port := range hostPorts(&p) {
			taken[port] = true
		}
	}
	return taken, nil
}

// waitAgentReady waits for a Ready agent pod other than notUID.
func waitAgentReady(ctx context.Context, t *testing.T, c *cluster.Cluster, notUID types.UID) *corev1.Pod {
	t.Helper()
	start := time.Now()
	var ready *corev1.Pod
	last := "no pod"
	for ready == nil {
		list, err := c.Client().CoreV1().Pods(agentNamespace).List(ctx, metav1.ListOptions{LabelSelector: agentLabel})
		if err != nil && ctx.Err() != nil {
			t.Fatalf("no Ready agent pod: %v; last: %s", err, last)
		}
		if err == nil {
			last = ""
			for i, p := range list.Items {
				last += fmt.Sprintf("%s %s ready=%s; ", p.Name, p.Status.Phase, cluster.PodCondition(&p, corev1.PodReady))
				if p.UID != notUID && p.DeletionTimestamp == nil &&
					cluster.PodCondition(&p, corev1.PodReady) == corev1.ConditionTrue {
					ready = &list.Items[i]
				}
			}
		}
		if ready == nil {
			select {
			case <-ctx.Done():
				t.Fatalf("no Ready agent pod: %v; last: %s", ctx.Err(), last)
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	t.Logf("agent pod %s Ready %v after the change", ready.Name, time.Since(start).Round(time.Millisecond))
	return ready
}

func waitNoAgentPods(ctx context.Context, t *testing.T, c *cluster.Cluster) {
	t.Helper()
	for {
		list, err := c.Client().CoreV1().Pods(agentNamespace).List(ctx, metav1.ListOptions{LabelSelector: agentLabel})
		if err == nil && len(list.Items) == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("agent pods still there: %v", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// watchPodReady watches the pod until the returned stop function is
// called, which returns every version of it whose Ready was not True and
// every change of probelet's condition (with who wrote it), so a flap
// shorter than any poll is still seen and explained.
func watchPodReady(ctx context.Context, c *cluster.Cluster, namespace, name string) func() []string {
	ctx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	var seen []string
	w, err := c.Client().CoreV1().Pods(namespace).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		cancel()
		return func() []string { return []string{"watch: " + err.Error()} }
	}
	go func() {
		defer close(stopped)
		defer w.Stop()
		lastGate := ""
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			gate := "absent"
			for _, c := range p.Status.Conditions {
				if c.Type == "probelet.io/ready" {
					gate = fmt.Sprintf("%s (%s: %s) since %s", c.Status, c.Reason, c.Message, c.LastTransitionTime.Format(time.TimeOnly))
				}
			}
			ready := cluster.PodCondition(p, corev1.PodReady)
			if ready != corev1.ConditionTrue || (lastGate != "" && gate != lastGate) {
				seen = append(seen, fmt.Sprintf("%s rv %s Ready=%s probelet.io/ready=%s", time.Now().Format("15:04:05.000"),
					p.ResourceVersion, ready, gate))
			}
			lastGate = gate
		}
	}()
	return func() []string {
		cancel()
		<-stopped
		return seen
	}
}

// runClusterApp creates a web pod on the node through the API server with
// a TCP liveness and an exec readiness probe in the annotation and
// probelet's readiness gate, and returns it once the kubelet runs it.
func runClusterApp(ctx context.Context, t *testing.T, c *cluster.Cluster, node string) app {
	t.Helper()
	grace := int64(5)
	probes, err := jsonString(probespec.PodProbes{"web": {
		Liveness:  tcpProbe(appPort, 1, 3),
		Readiness: execProbe(1, 3, "cat", indexDoc),
	}})
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Annotations: map[string]string{probespec.AnnotationProbes: probes}},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: &grace,
			ReadinessGates:                []corev1.PodReadinessGate{{ConditionType: "probelet.io/ready"}},
			Containers: []corev1.Container{{
				Name: "web", Image: testbed.BusyboxImage, ImagePullPolicy: corev1.PullNever,
				Command: webApp, Ports: httpPort,
			}},
		},
	}
	if _, err := c.Client().CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	running, err := c.WaitForPod(ctx, "default", "web", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].ContainerID != ""
	})
	if err != nil {
		t.Fatal(err)
	}
	_, id, _ := strings.Cut(running.Status.ContainerStatuses[0].ContainerID, "://")
	return app{name: "web", pod: string(running.UID), ctr: id, ip: running.Status.PodIP}
}

// checkAnswers: TCP answered by the eBPF short-circuit, exec through CRI,
// and probectl lists the container through the host socket.
func checkAnswers(t *testing.T, d *daemon, a app) {
	t.Helper()
	c := d.describe(a.ctr)
	if l := c.Probes["liveness"]; l.Result != "Success" || l.Method != "ebpf" {
		t.Errorf("liveness %s by %q, want Success by the eBPF short-circuit", l.Result, l.Method)
	}
	if r := c.Probes["readiness"]; r.Method != "exec" {
		t.Errorf("readiness by %q, want exec (through CRI)", r.Method)
	}
	if c.PodNamespace != "default" || c.PodName != "web" {
		t.Errorf("probectl names the pod %s/%s", c.PodNamespace, c.PodName)
	}
	if out := d.mustProbectl("ps"); !containsLine(out, "web", "true") {
		t.Errorf("probectl ps does not list web as ready:\n%s", out)
	}
}

// checkNotRestarted: the kubelet reports no restart of the workload.
func checkNotRestarted(ctx context.Context, t *testing.T, c *cluster.Cluster, a app) {
	t.Helper()
	p, err := c.Client().CoreV1().Pods("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := p.Status.ContainerStatuses[0].RestartCount; n != 0 {
		t.Errorf("the workload restarted %d times", n)
	}
	_, id, _ := strings.Cut(p.Status.ContainerStatuses[0].ContainerID, "://")
	if id != a.ctr {
		t.Errorf("the workload's container is %s, was %s", id, a.ctr)
	}
}

// checkAgentGone: no probelet socket, metrics listener or agent container
// left on the node.
func checkAgentGone(t *testing.T, bed *testbed.Bed, socket, metrics string) {
	t.Helper()
	if _, err := os.Stat(socket); err == nil {
		t.Errorf("socket %s left behind", socket)
	}
	if c, err := net.DialTimeout("tcp", metrics, time.Second); err == nil {
		c.Close()
		t.Errorf("something still listens on %s", metrics)
	}
	out, err := bed.Crictl("ps", "-q", "--label", "io.kubernetes.pod.namespace="+agentNamespace)
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Errorf("agent containers still running: %q, %v", out, err)
	}
}

func logSize(t *testing.T, bed *testbed.Bed) int64 {
	t.Helper()
	st, err := os.Stat(bed.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

func waitContainerdLog(t *testing.T, bed *testbed.Bed, from int64, want string) {
	t.Helper()
	eventually(t, launchTimeout, "containerd to log "+want, func() (bool, string) {
		data, err := os.ReadFile(bed.LogPath())
		if err != nil || int64(len(data)) < from {
			return false, fmt.Sprint(err)
		}
		return strings.Contains(string(data[from:]), want), "not yet"
	})
}
