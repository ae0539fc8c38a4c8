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

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/probelet/probelet/internal/cluster"
	"github.com/probelet/probelet/internal/testbed"
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
// of the chart (the controller's and the webhook's included); the agent
// becomes Ready under the kubelet's probes, registers over NRI and writes a
// workload's readiness gate. `helm upgrade` with another flag value rolls
// the agent without dropping the workload's Ready condition and the new
// pod runs with the flag; `helm uninstall` leaves no agent, no socket, no
// NRI registration and none of the chart's cluster-wide objects.
//
// The controller runs with 0 replicas here: its pods would have to reach
// the API server, which listens on the host's loopback only, from the pod
// network. Its binary runs on this control plane in the cluster tests.
func TestHelmInstallOnCluster(t *testing.T) {
	t.Parallel()
	helm, err := helmPath()
	if err != nil {
		t.Fatalf("hack/tools.sh helm: %v", err)
	}
	archive, _ := probeletImage(t)
	c := cluster.Start(t)
	bed := testbed.Start(t)
	if err := bed.ImportImage(archive); err != nil {
		t.Fatal(err)
	}
	makeShared(t, bed.Dir())
	k := c.StartKubelet(t, bed)
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	go bindPending(ctx, t, c, agentNamespace, k.NodeName())

	metrics := freeLocalAddr(t)
	_, port, _ := net.SplitHostPort(metrics)
	values := helmBedValues(t, bed.Dir(), port, strings.TrimPrefix(c.URL(), "https://"))
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
	if _, err := c.Client().AppsV1().Deployments(agentNamespace).Get(ctx, "probelet-controller", metav1.GetOptions{}); err != nil {
		t.Errorf("the controller's Deployment: %v", err)
	}
	if _, err := c.Client().CoreV1().Services(agentNamespace).Get(ctx, "probelet-webhook", metav1.GetOptions{}); err != nil {
		t.Errorf("the webhook's Service: %v", err)
	}
	if _, err := c.Client().AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "probelet", metav1.GetOptions{}); err != nil {
		t.Errorf("the webhook configuration: %v", err)
	}

	socket := filepath.Join(bed.Dir(), "probelet-run", "probelet.sock")
	d := &daemon{t: t, bed: bed, socket: "unix://" + socket, metrics: metrics}
	web := runClusterApp(ctx, t, c, k.NodeName())
	waitReady(t, d, web, true, "probelet test bed")
	checkAnswers(t, d, web)
	if _, err := c.WaitForPod(ctx, "default", "web", func(p *corev1.Pod) bool {
		return cluster.PodCondition(p, corev1.PodReady) == corev1.ConditionTrue
	}); err != nil {
		t.Fatal(err)
	}

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

	logFrom = logSize(t, bed)
	run("uninstall", "probelet", "--wait")
	waitNoAgentPods(ctx, t, c)
	waitContainerdLog(t, bed, logFrom, `connection to plugin \"10-probelet\" closed`)
	checkAgentGone(t, bed, socket, metrics)
	checkNotRestarted(ctx, t, c, web)
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
}

// helmBedValues writes the chart values that point the agent at the bed
// (what bedOverlay does for kustomize) and returns the file.
func helmBedValues(t *testing.T, bedDir, port, apiServer string) string {
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
  # The bed's NRI socket lies in its containerd directory: one mount.
  hostPaths: {nri: %[3]s, containerd: %[3]s, run: %[4]s, state: %[6]s}
  extraEnv:
    - {name: KUBERNETES_SERVICE_HOST, value: %[7]q}
    - {name: KUBERNETES_SERVICE_PORT, value: %[8]q}
controller:
  replicas: 0
`, strings.Split(e2eImageName, ":")[0], strings.Split(e2eImageName, ":")[1], bedDir, run, port, state, host, apiPort)
	file := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(file, []byte(values), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}
