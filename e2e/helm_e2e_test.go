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
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/probelet/probelet/controller/marking"
	"github.com/probelet/probelet/internal/cluster"
	"github.com/probelet/probelet/probespec"
)

// helmPath is Helm as `make helm` installs it (hack/tools.sh, cached).
var helmPath = sync.OnceValues(func() (string, error) {
	out, err := exec.Command(filepath.Join(repoRoot(), "hack", "tools.sh"), "helm").Output()
	return strings.TrimSpace(string(out)), err
})

// TestHelmInstallOnCluster installs deploy/helm/probelet with `helm
// install` on the real control plane, as TestDaemonSetOnCluster applies
// the kustomize overlay: the image imported into a containerd test bed,
// values pointing the agent at the bed. The API server accepts every object
// of the chart; the agent becomes Ready under the kubelet's probes,
// registers over NRI and writes a workload's readiness gate; the controller
// becomes available, makes the webhook's certificate and caBundle, and the
// webhook answers through its Service: a pod created in a labelled
// namespace has its probes moved. `helm upgrade` with another flag value
// rolls the agent without dropping the workload's Ready condition, the new
// pod runs with the flag, and the webhook still answers; `helm uninstall`
// leaves no agent, no socket, no NRI registration, none of the chart's
// cluster-wide objects and not its namespace.
//
// The controller runs one replica in the host's network
// (controller.hostNetwork): the test control plane's API server listens on
// loopback, which a pod network cannot reach.
func TestHelmInstallOnCluster(t *testing.T) {
	t.Parallel()
	helm, err := helmPath()
	if err != nil {
		t.Fatalf("hack/tools.sh helm: %v", err)
	}
	ctx, c, bed, k := agentNode(t)

	metrics := freeLocalAddr(t)
	_, port, _ := net.SplitHostPort(metrics)
	values := helmBedValues(t, bed.Dir(), port, strings.TrimPrefix(c.URL(), "https://"), k.NodeIP())
	run := func(args ...string) {
		t.Helper()
		args = append(args, "--kubeconfig", c.Kubeconfig(), "--namespace", "default")
		out, err := exec.CommandContext(ctx, helm, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("helm %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		t.Logf("helm %s:\n%s", args[0], out)
	}

	logFrom := logSize(t, bed)
	run("install", "probelet", filepath.Join(repoRoot(), "deploy", "helm", "probelet"), "--values", values)
	first := waitAgentReady(ctx, t, c, "")
	waitContainerdLog(t, bed, logFrom, `plugin \"10-probelet\" connected and synchronized`)
	eventually(t, 2*time.Minute, "the controller's Deployment available", func() (bool, string) {
		d, err := c.Client().AppsV1().Deployments(agentNamespace).Get(ctx, "probelet-controller", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return d.Status.AvailableReplicas == 1, fmt.Sprintf("%d available", d.Status.AvailableReplicas)
	})
	managed := managedNamespace(ctx, t, c)
	checkWebhookAnswers(ctx, t, c, managed)

	d, web, socket := agentProbesWorkload(ctx, t, c, bed, k, metrics)

	// An upgrade changes a flag: the agent rolls, the workload stays Ready.
	flaps := watchPodReady(ctx, c, "default", "web")
	run("upgrade", "probelet", filepath.Join(repoRoot(), "deploy", "helm", "probelet"), "--values", values,
		"--set", "agent.flags.liveness-action=report")
	second := waitAgentReady(ctx, t, c, first.UID)
	if args := second.Spec.Containers[0].Args; !slices.Contains(args, "--liveness-action=report") {
		t.Errorf("the upgraded agent runs with %q, want --liveness-action=report among them", args)
	}
	waitReady(t, d, web, true, "probelet test bed")
	checkNotRestarted(ctx, t, c, web)
	if f := flaps(); len(f) > 0 {
		t.Errorf("the workload's Ready condition dropped during the upgrade: %q", f)
	}
	checkWebhookAnswers(ctx, t, c, managed)

	logFrom = logSize(t, bed)
	run("uninstall", "probelet", "--wait")
	checkUninstalled(ctx, t, c, bed, logFrom, socket, metrics, web)
	admission := c.Client().AdmissionregistrationV1()
	rbac := c.Client().RbacV1()
	for what, get := range map[string]func() error{
		"ClusterRole probelet": func() error {
			_, err := rbac.ClusterRoles().Get(ctx, "probelet", metav1.GetOptions{})
			return err
		},
		"ClusterRole probelet-controller": func() error {
			_, err := rbac.ClusterRoles().Get(ctx, "probelet-controller", metav1.GetOptions{})
			return err
		},
		"MutatingWebhookConfiguration probelet": func() error {
			_, err := admission.MutatingWebhookConfigurations().Get(ctx, "probelet", metav1.GetOptions{})
			return err
		},
		"ValidatingAdmissionPolicy probelet-own-node-pod-status": func() error {
			_, err := admission.ValidatingAdmissionPolicies().Get(ctx, "probelet-own-node-pod-status", metav1.GetOptions{})
			return err
		},
	} {
		if err := get(); !apierrors.IsNotFound(err) {
			t.Errorf("%s after helm uninstall: %v, want NotFound", what, err)
		}
	}
	// The namespace goes with what the controller made in it (the
	// webhook's Secret, the Leases).
	eventually(t, 2*time.Minute, "namespace "+agentNamespace+" gone", func() (bool, string) {
		_, err := c.Client().CoreV1().Namespaces().Get(ctx, agentNamespace, metav1.GetOptions{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

// managedNamespace creates a namespace labelled for the webhook.
func managedNamespace(ctx context.Context, t *testing.T, c *cluster.Cluster) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "adopted",
		Labels: map[string]string{probespec.LabelProbes: probespec.LabelManaged}}}
	if _, err := c.Client().CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// checkWebhookAnswers creates (dry run: admission runs, nothing is stored)
// a pod with a kubelet readiness probe in namespace until the webhook,
// called by the API server through the chart's Service and trusting the
// caBundle the controller keeps, moves the probe; until then the pod comes
// back unchanged (failurePolicy Ignore).
func checkWebhookAnswers(ctx context.Context, t *testing.T, c *cluster.Cluster, namespace string) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "adoptee", Namespace: namespace},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app",
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
				TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}}}}},
	}
	eventually(t, 2*time.Minute, "the webhook moving a pod's probes", func() (bool, string) {
		got, err := c.Client().CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			return false, err.Error()
		}
		_, annotated := got.Annotations[probespec.AnnotationProbes]
		gated := marking.Gated(got)
		return annotated && gated && got.Spec.Containers[0].ReadinessProbe == nil,
			fmt.Sprintf("annotated %v, gated %v, probe in spec %v", annotated, gated, got.Spec.Containers[0].ReadinessProbe != nil)
	})
}

// helmBedValues writes the chart values that point the agent at the bed
// (what bedOverlay does for kustomize), and the controller at free host
// ports and the API server, and returns the file.
func helmBedValues(t *testing.T, bedDir, port, apiServer, nodeIP string) string {
	t.Helper()
	host, apiPort, _ := strings.Cut(apiServer, ":")
	run, state := filepath.Join(bedDir, "probelet-run"), filepath.Join(bedDir, "probelet-state")
	values := fmt.Sprintf(`image: {repository: %[1]s, tag: %[2]s, pullPolicy: Never}
agent:
  flags:
    nri-socket: %[3]s/nri.sock
    runtime-endpoint: unix://%[3]s/containerd.sock
    listen: unix://%[4]s/probelet.sock
    metrics-bind-address: 127.0.0.1:%[5]s
    state-dir: %[6]s
    # Other tests' probelets share the host's network.
    state-listen: :%[12]s
  # The bed's NRI socket lies in its containerd directory: one mount.
  hostPaths: {nri: %[3]s, containerd: %[3]s, run: %[4]s, state: %[6]s}
  extraEnv:
    - {name: KUBERNETES_SERVICE_HOST, value: %[7]q}
    - {name: KUBERNETES_SERVICE_PORT, value: %[8]q}
controller:
  replicas: 1
  hostNetwork: true
  flags:
    # The node's address: the kubelet probes /healthz and /readyz at the
    # pod's IP, the host's in its network.
    metrics-bind-address: %[11]s:%[9]s
    webhook-listen: :%[10]s
    probe-api-listen: :%[13]s
  extraEnv:
    - {name: KUBERNETES_SERVICE_HOST, value: %[7]q}
    - {name: KUBERNETES_SERVICE_PORT, value: %[8]q}
`, strings.Split(e2eImageName, ":")[0], strings.Split(e2eImageName, ":")[1], bedDir, run, port, state, host, apiPort,
		freePort(t), freePort(t), nodeIP, freePort(t), freePort(t))
	file := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(file, []byte(values), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// freePort is the port of a free local address.
func freePort(t *testing.T) string {
	_, port, _ := net.SplitHostPort(freeLocalAddr(t))
	return port
}
