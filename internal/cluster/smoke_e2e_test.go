//go:build e2e

package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/probelet/probelet/internal/cluster"
	"github.com/probelet/probelet/internal/testbed"
	"github.com/probelet/probelet/internal/testbed/harness"
)

// readyGate is the readiness gate probelet owns.
const readyGate corev1.PodConditionType = "probelet.io/ready"

// sysctls are the host settings the kubelet changes; the test wants them
// back as they were.
var sysctls = []string{"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes"}

// TestSmoke: a control plane and a registered kubelet on a containerd test
// bed; a pod with a readiness gate runs, is ContainersReady but not Ready
// until the gate's condition is patched True on pods/status; it survives a
// kubelet restart, is deleted, and teardown leaves nothing behind.
func TestSmoke(t *testing.T) {
	hostBefore := hostSysctls(t)
	began := time.Now()
	c := cluster.Start(t)
	t.Logf("control plane up in %v at %s (%s)", time.Since(began).Round(time.Millisecond), c.URL(), c.Dir())
	bed := testbed.Start(t)
	mark := time.Now()
	k := c.StartKubelet(t, bed)
	t.Logf("kubelet %s registered and Ready in %v", k.NodeName(), time.Since(mark).Round(time.Millisecond))

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	checkAPI(t, ctx, c, k)
	checkReadinessGate(t, ctx, c, k)
	checkServiceAccountForbidden(t, ctx, c)
	checkKubeletRestart(t, ctx, c, k)
	checkDelete(t, ctx, c)

	var pids []int
	for _, pid := range c.PIDs() {
		pids = append(pids, pid)
	}
	if pid, err := k.PID(); err == nil {
		pids = append(pids, pid)
	} else {
		t.Errorf("kubelet PID: %v", err)
	}
	mark = time.Now()
	for _, stop := range []func() error{k.Stop, bed.Stop, c.Stop} {
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("kubelet, bed and control plane down in %v", time.Since(mark).Round(time.Millisecond))
	checkNoTrace(t, []string{c.Dir(), k.Dir(), bed.Dir()}, pids, hostBefore)
}

// checkAPI: the admin client, kubectl and the Node; the admission
// registration API serves ValidatingAdmissionPolicies (GA since 1.30).
func checkAPI(t *testing.T, ctx context.Context, c *cluster.Cluster, k *cluster.Kubelet) {
	node, err := c.Client().CoreV1().Nodes().Get(ctx, k.NodeName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ip := nodeInternalIP(node); ip != k.NodeIP() {
		t.Errorf("node InternalIP %q, want %q", ip, k.NodeIP())
	}
	out, err := c.Kubectl("get", "node", k.NodeName(), "-o", "jsonpath={.status.nodeInfo.kubeletVersion}")
	if err != nil || !strings.HasPrefix(string(out), "v1.") {
		t.Errorf("kubectl get node: %q, %v", out, err)
	}
	res, err := c.Client().Discovery().ServerResourcesForGroupVersion("admissionregistration.k8s.io/v1")
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, r := range res.APIResources {
		found = found || r.Name == "validatingadmissionpolicies"
	}
	if !found {
		t.Error("admissionregistration.k8s.io/v1 does not serve validatingadmissionpolicies")
	}
}

func nodeInternalIP(n *corev1.Node) string {
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	return ""
}

// gatedPod is a busybox pod on the kubelet's node (there is no scheduler)
// with probelet's readiness gate; its shell exits on SIGTERM at once.
func gatedPod(node string) *corev1.Pod {
	grace := int64(5)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "gated", Namespace: "default"},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			TerminationGracePeriodSeconds: &grace,
			ReadinessGates:                []corev1.PodReadinessGate{{ConditionType: readyGate}},
			Containers: []corev1.Container{{
				Name:            "main",
				Image:           testbed.BusyboxImage,
				ImagePullPolicy: corev1.PullNever,
				Command:         []string{"sh", "-c", `trap "exit 0" TERM; sleep 3600 & wait`},
			}},
		},
	}
}

func checkReadinessGate(t *testing.T, ctx context.Context, c *cluster.Cluster, k *cluster.Kubelet) {
	pods := c.Client().CoreV1().Pods("default")
	mark := time.Now()
	if _, err := pods.Create(ctx, gatedPod(k.NodeName()), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	running := func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodRunning && cluster.PodCondition(p, corev1.ContainersReady) == corev1.ConditionTrue
	}
	pod, err := c.WaitForPod(ctx, "default", "gated", running)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pod Running and ContainersReady %v after create", time.Since(mark).Round(time.Millisecond))
	if got := cluster.PodCondition(pod, corev1.PodReady); got != corev1.ConditionFalse {
		t.Errorf("Ready = %q before the gate is set, want False", got)
	}

	// A strategic merge patch merges conditions by type; a JSON merge patch
	// would replace the list and wipe the kubelet's own conditions.
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []corev1.PodCondition{{
		Type: readyGate, Status: corev1.ConditionTrue, Reason: "Probed", LastTransitionTime: metav1.Now(),
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	mark = time.Now()
	if _, err := pods.Patch(ctx, "gated", types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	pod, err = c.WaitForPod(ctx, "default", "gated", func(p *corev1.Pod) bool {
		return cluster.PodCondition(p, corev1.PodReady) == corev1.ConditionTrue
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Ready=True %v after the patch", time.Since(mark).Round(time.Millisecond))
	for _, ct := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady, readyGate} {
		if got := cluster.PodCondition(pod, ct); got != corev1.ConditionTrue {
			t.Errorf("condition %s = %q after the patch, want True", ct, got)
		}
	}
}

// checkServiceAccountForbidden: a ServiceAccount with no RBAC rules
// authenticates with its bound token and is forbidden to list pods.
func checkServiceAccountForbidden(t *testing.T, ctx context.Context, c *cluster.Cluster) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "nobody", Namespace: "default"}}
	if _, err := c.Client().CoreV1().ServiceAccounts("default").Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg, err := c.ServiceAccountConfig(ctx, "default", "nobody", 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("list pods as default/nobody: %v, want Forbidden", err)
	} else if !strings.Contains(err.Error(), "system:serviceaccount:default:nobody") {
		t.Errorf("forbidden for another user: %v", err)
	}
	kubeconfig, err := c.ServiceAccountKubeconfig(ctx, "default", "nobody", 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.KubectlAs(kubeconfig, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
	if err != nil || string(out) != "system:serviceaccount:default:nobody" {
		t.Errorf("kubectl auth whoami with the ServiceAccount kubeconfig: %q, %v", out, err)
	}
	if _, err := c.KubectlAs(kubeconfig, "get", "pods"); err == nil || !strings.Contains(err.Error(), "Forbidden") {
		t.Errorf("kubectl get pods as default/nobody: %v, want Forbidden", err)
	}
}

// checkKubeletRestart: the pod keeps running and Ready across a kubelet
// restart, and the node is Ready again.
func checkKubeletRestart(t *testing.T, ctx context.Context, c *cluster.Cluster, k *cluster.Kubelet) {
	before, err := c.Client().CoreV1().Pods("default").Get(ctx, "gated", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mark := time.Now()
	if err := k.Restart(); err != nil {
		t.Fatal(err)
	}
	t.Logf("kubelet restarted (healthy) in %v", time.Since(mark).Round(time.Millisecond))
	pod, err := c.WaitForPod(ctx, "default", "gated", func(p *corev1.Pod) bool {
		return cluster.PodCondition(p, corev1.PodReady) == corev1.ConditionTrue
	})
	if err != nil {
		t.Fatal(err)
	}
	if b, a := restarts(before), restarts(pod); a != b {
		t.Errorf("container restarts %d -> %d across the kubelet restart", b, a)
	}
}

func restarts(p *corev1.Pod) int32 {
	var n int32
	for _, cs := range p.Status.ContainerStatuses {
		n += cs.RestartCount
	}
	return n
}

func checkDelete(t *testing.T, ctx context.Context, c *cluster.Cluster) {
	mark := time.Now()
	if err := c.Client().CoreV1().Pods("default").Delete(ctx, "gated", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitForPodGone(ctx, "default", "gated"); err != nil {
		t.Fatal(err)
	}
	t.Logf("pod deleted and confirmed by the kubelet in %v", time.Since(mark).Round(time.Millisecond))
}

func readSysctls(t *testing.T) map[string]string {
	t.Helper()
	vals := map[string]string{}
	for _, s := range sysctls {
		data, err := os.ReadFile(filepath.Join("/proc/sys", s))
		if err != nil {
			t.Fatal(err)
		}
		vals[s] = strings.TrimSpace(string(data))
	}
	return vals
}

// hostSysctls are the host's own values of the sysctls: while a kubelet of
// another test (another package runs beside this one) holds the host state,
// /proc/sys has the kubelet's, and the host's are those the lease saved,
// which the last kubelet down restores. Read under the lease's lock.
func hostSysctls(t *testing.T) map[string]string {
	t.Helper()
	state := hostStateDir()
	lock, err := os.OpenFile(state+".lock", os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	holders, _ := os.ReadDir(hostStateHolders())
	saved, err := os.ReadFile(filepath.Join(state, "saved"))
	if len(holders) == 0 || err != nil {
		return readSysctls(t)
	}
	vals := map[string]string{}
	for line := range strings.Lines(string(saved)) {
		if s, v, ok := strings.Cut(strings.TrimSpace(line), " "); ok && slices.Contains(sysctls, s) {
			vals[s] = v
		}
	}
	if len(vals) != len(sysctls) {
		t.Fatalf("%s/saved holds %d of the %d sysctls:\n%s", state, len(vals), len(sysctls), saved)
	}
	t.Logf("another kubelet (%d) holds the host state: the host's sysctls are those it saved", len(holders))
	return vals
}

// checkNoTrace proves teardown left nothing: none of the PIDs, no process
// naming a directory, no mount under one, no directory, no container log
// link into one, and the sysctls as before (unless a kubelet of another
// test still holds them).
func checkNoTrace(t *testing.T, dirs []string, pids []int, hostBefore map[string]string) {
	for _, pid := range pids {
		if testbed.Alive(pid) {
			t.Errorf("process %d still running", pid)
		}
	}
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		for _, f := range cmdlines {
			if data, err := os.ReadFile(f); err == nil && bytes.Contains(data, []byte(d)) {
				t.Errorf("%s still names %s: %q", f, d, bytes.ReplaceAll(data, []byte{0}, []byte{' '}))
			}
		}
		if bytes.Contains(mounts, []byte(d)) {
			t.Errorf("mounts left under %s", d)
		}
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still exists (%v)", d, err)
		}
	}
	links, _ := filepath.Glob("/var/log/containers/*")
	for _, l := range links {
		target, _ := os.Readlink(l)
		for _, d := range dirs {
			if strings.HasPrefix(target, d+"/") {
				t.Errorf("container log link %s -> %s left", l, target)
			}
		}
	}
	after := readSysctls(t)
	for s, v := range hostBefore {
		if after[s] == v {
			continue
		}
		if holders, _ := os.ReadDir(hostStateHolders()); len(holders) > 0 {
			t.Logf("sysctl %s = %s, was %s: another kubelet (%d) still holds the host state", s, after[s], v, len(holders))
			continue
		}
		t.Errorf("sysctl %s = %s after teardown, was %s", s, after[s], v)
	}
}

// hostStateDir is hack/cluster/hoststate.sh's lease: holders/, saved, and
// the lock file beside it.
func hostStateDir() string { return filepath.Join(harness.CacheDir(), ".kubelet-host-state") }

func hostStateHolders() string { return filepath.Join(hostStateDir(), "holders") }
