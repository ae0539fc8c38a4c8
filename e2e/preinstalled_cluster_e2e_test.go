//go:build e2e

package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/probelet/probelet/internal/cluster"
	"github.com/probelet/probelet/internal/testbed"
)

const installerLabel = "app.kubernetes.io/name=probelet-nri-installer"

// TestPreinstalledOverlayOnCluster applies deploy/overlays/preinstalled
// with `kubectl apply -k` on the real control plane, pointed at a test
// bed: the installer DaemonSet copies the image's probelet and the
// ConfigMap's probelet.conf into the bed's NRI plugin directories; after a
// containerd restart containerd launches probelet, which probes a workload
// the kubelet runs and serves probectl. Deleting the overlay leaves the
// plugin installed (the installer never uninstalls, so a rollout never
// takes probing away); the installer's --uninstall and a restart remove it
// without a trace.
func TestPreinstalledOverlayOnCluster(t *testing.T) {
	t.Parallel()
	archive, _ := probeletImage(t)
	c := cluster.Start(t)
	bed := testbed.Start(t)
	if err := bed.ImportImage(archive); err != nil {
		t.Fatal(err)
	}
	k := c.StartKubelet(t, bed)
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	go bindPending(ctx, t, c, agentNamespace, k.NodeName())

	tools := t.TempDir()
	binary := imageBinary(t, archive, "probelet", tools)
	pl := preinstalled{t: t, bed: bed, installer: imageBinary(t, archive, "probelet-nri-install", tools),
		pluginDir: filepath.Join(bed.Dir(), "nri", "plugins"), confDir: filepath.Join(bed.Dir(), "nri", "conf")}
	socket := filepath.Join(bed.Dir(), "pl.sock")
	metrics := freeLocalAddr(t)
	overlay := preinstalledOverlay(t, bed.Dir(), pl.writeConfig(socket, metrics))
	if _, err := c.Kubectl("apply", "-k", overlay); err != nil {
		t.Fatal(err)
	}
	waitInstalled(ctx, t, c, pl, binary)

	logFrom := pl.restartContainerd()
	pid := pl.waitLaunched(binary)
	waitContainerdLog(t, bed, logFrom, `pre-installed NRI plugin \"10-probelet\" synchronization success`)
	d := &daemon{t: t, bed: bed, socket: "unix://" + socket, metrics: metrics}
	eventually(t, launchTimeout, "/healthz to say NRI is connected", func() (bool, string) {
		code, body := d.healthz()
		return code == http.StatusOK, fmt.Sprintf("%d %s", code, body)
	})
	web := runClusterApp(ctx, t, c, k.NodeName())
	waitReady(t, d, web, true, "probelet test bed")
	checkAnswers(t, d, web)

	if _, err := c.Kubectl("delete", "-k", overlay, "--wait"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pl.plugin()); err != nil || !testbed.Alive(pid) {
		t.Errorf("deleting the overlay uninstalled or stopped the plugin: %v, alive %v", err, testbed.Alive(pid))
	}

	pl.install("--uninstall")
	logFrom = pl.restartContainerd()
	eventually(t, launchTimeout, "the plugin to exit with containerd", func() (bool, string) {
		return !testbed.Alive(pid), fmt.Sprintf("pid %d alive", pid)
	})
	pl.checkNothingLeft(socket, metrics, logFrom)
	checkNotRestarted(ctx, t, c, web)
}

// preinstalledOverlay wraps deploy/overlays/preinstalled for the bed in
// bedDir: the e2e image, the installer's host directories in the bed, and
// config (a probelet.conf pointed at the bed) as the plugin configuration.
func preinstalledOverlay(t *testing.T, bedDir, config string) string {
	t.Helper()
	dir := t.TempDir()
	base, err := filepath.Rel(dir, filepath.Join(repoRoot(), "deploy", "overlays", "preinstalled"))
	if err != nil {
		t.Fatal(err)
	}
	conf, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "probelet.conf"), conf, 0o644); err != nil {
		t.Fatal(err)
	}
	name, tag, _ := strings.Cut(e2eImageName, ":")
	k := fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - %[1]s
images:
  - name: probelet
    newName: %[3]s
    newTag: %[4]s
configMapGenerator:
  - name: probelet-nri-config
    namespace: probelet-system
    behavior: replace
    files:
      - probelet.conf
patches:
  - patch: |-
      apiVersion: apps/v1
      kind: DaemonSet
      metadata:
        name: probelet-nri-installer
        namespace: probelet-system
      spec:
        template:
          spec:
            volumes:
              - name: nri-opt
                hostPath:
                  path: %[2]s/nri
                  type: DirectoryOrCreate
              - name: nri-conf
                hostPath:
                  path: %[2]s/nri/conf
                  type: DirectoryOrCreate
`, base, bedDir, name, tag)
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// waitInstalled waits for the installer pod to run and to have put the
// image's probelet and the configuration into the bed.
func waitInstalled(ctx context.Context, t *testing.T, c *cluster.Cluster, pl preinstalled, binary string) {
	t.Helper()
	want, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for {
		list, err := c.Client().CoreV1().Pods(agentNamespace).List(ctx, metav1.ListOptions{LabelSelector: installerLabel})
		running := err == nil && len(list.Items) == 1 && list.Items[0].Status.Phase == corev1.PodRunning
		got, _ := os.ReadFile(pl.plugin())
		_, confErr := os.Stat(pl.config())
		if running && confErr == nil && string(got) == string(want) {
			logs, _ := c.Kubectl("-n", agentNamespace, "logs", list.Items[0].Name)
			t.Logf("installer pod ran %v after apply:\n%s", time.Since(start).Round(time.Millisecond), logs)
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the installer did not install: pod running %v (%v), config %v", running, err, confErr)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
