//go:build e2e

package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// bedOverlay writes a kustomization around deploy/overlays/testbed that
// points the agent at the containerd test bed in bedDir: the bed's
// directory (NRI and CRI sockets) mounted at the same path instead of
// /var/run/nri and /run/containerd, probelet's socket in
// bedDir/probelet-run, its state in bedDir/probelet-state, metrics on
// 127.0.0.1:port (the DaemonSet runs in the host network, next to other
// tests' probelets). With apiServer (HOST:PORT) set, the in-cluster
// configuration points there instead of at the kubernetes Service, which
// nothing routes on a test bed (no kube-proxy). It returns the directory to
// `kubectl apply -k`.
func bedOverlay(t *testing.T, bedDir string, port int, apiServer string) string {
	t.Helper()
	return bedOverlayOf(t, repoRoot(), "", bedDir, port, apiServer)
}

// bedOverlayOf is bedOverlay for the deploy/ of the tree at root (another
// release's), its image tagged tag ("" leaves the testbed overlay's).
func bedOverlayOf(t *testing.T, root, tag, bedDir string, port int, apiServer string) string {
	t.Helper()
	run, state := filepath.Join(bedDir, "probelet-run"), filepath.Join(bedDir, "probelet-state")
	dir := t.TempDir()
	// kustomize takes bases by relative path only.
	base, err := filepath.Rel(dir, filepath.Join(root, "deploy", "overlays", "testbed"))
	if err != nil {
		t.Fatal(err)
	}
	images := ""
	if tag != "" {
		images = fmt.Sprintf("images:\n  - name: %s\n    newTag: %s\n", strings.Split(e2eImageName, ":")[0], tag)
	}
	k := fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - %[1]s
%[7]spatches:
  - patch: |-
      apiVersion: apps/v1
      kind: DaemonSet
      metadata:
        name: probelet
        namespace: probelet-system
      spec:
        template:
          spec:
            containers:
              - name: probelet
                args:
                  - --nri-socket=%[2]s/nri.sock
                  - --runtime-endpoint=unix://%[2]s/containerd.sock
                  - --listen=unix://%[3]s/probelet.sock
                  - --metrics-bind-address=127.0.0.1:%[4]d
                  - --tcp-mode=auto
                  - --node-name=$(NODE_NAME)
                  - --state-dir=%[5]s
%[6]s                ports:
                  - containerPort: 9809
                    protocol: TCP
                    $patch: delete
                  # The state listener is not served here (the args
                  # above): other tests' probelets share the host's
                  # network.
                  - containerPort: 10263
                    protocol: TCP
                    $patch: delete
                  - name: metrics
                    containerPort: %[4]d
                    protocol: TCP
                volumeMounts:
                  - mountPath: /var/run/nri
                    $patch: delete
                  - mountPath: /run/containerd
                    $patch: delete
                  - mountPath: /run/probelet
                    $patch: delete
                  - mountPath: /var/lib/probelet
                    $patch: delete
                  - name: nri
                    mountPath: %[2]s
                    readOnly: true
                    mountPropagation: HostToContainer
                  - name: probelet-run
                    mountPath: %[3]s
                  - name: probelet-state
                    mountPath: %[5]s
            volumes:
              - name: nri
                hostPath:
                  path: %[2]s
                  type: Directory
              - name: containerd
                $patch: delete
              - name: probelet-run
                hostPath:
                  path: %[3]s
                  type: DirectoryOrCreate
              - name: probelet-state
                hostPath:
                  path: %[5]s
                  type: DirectoryOrCreate
`, base, bedDir, run, port, state, apiEnv(apiServer), images)
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// apiEnv is the container's env entries naming the API server, "" for none.
func apiEnv(apiServer string) string {
	host, port, ok := strings.Cut(apiServer, ":")
	if !ok {
		return ""
	}
	return fmt.Sprintf(`                env:
                  - name: KUBERNETES_SERVICE_HOST
                    value: %q
                  - name: KUBERNETES_SERVICE_PORT
                    value: %q
`, host, port)
}

// renderAgent builds a kustomization with kustomize's own engine and
// returns its DaemonSet probelet.
func renderAgent(t *testing.T, dir string) *appsv1.DaemonSet {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	for _, r := range m.Resources() {
		if r.GetKind() != "DaemonSet" || r.GetName() != "probelet" {
			continue
		}
		data, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		var ds appsv1.DaemonSet
		if err := yaml.UnmarshalStrict(data, &ds); err != nil {
			t.Fatal(err)
		}
		return &ds
	}
	t.Fatalf("%s renders no DaemonSet probelet", dir)
	return nil
}

// TestBedOverlay renders the overlay a test applies to run the DaemonSet on
// a bed: the locally built image, never pulled, every host path and flag
// pointing at the bed, nothing of the node's own containerd left mounted.
func TestBedOverlay(t *testing.T) {
	bedDir := "/tmp/pbt-example"
	ds := renderAgent(t, bedOverlay(t, bedDir, 24242, "127.0.0.1:6443"))
	pod := ds.Spec.Template.Spec
	c := pod.Containers[0]
	if c.Image != e2eImageName || c.ImagePullPolicy != corev1.PullNever {
		t.Errorf("image %s pull %s, want %s never pulled", c.Image, c.ImagePullPolicy, e2eImageName)
	}
	wantArgs := []string{"--nri-socket=" + bedDir + "/nri.sock", "--runtime-endpoint=unix://" + bedDir + "/containerd.sock",
		"--listen=unix://" + bedDir + "/probelet-run/probelet.sock", "--metrics-bind-address=127.0.0.1:24242", "--tcp-mode=auto",
		"--node-name=$(NODE_NAME)", "--state-dir=" + bedDir + "/probelet-state"}
	if !slices.Equal(c.Args, wantArgs) {
		t.Errorf("args %q, want %q", c.Args, wantArgs)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
		if e.ValueFrom != nil {
			env[e.Name] = e.ValueFrom.String()
		}
	}
	if env["KUBERNETES_SERVICE_HOST"] != "127.0.0.1" || env["KUBERNETES_SERVICE_PORT"] != "6443" || env["NODE_NAME"] == "" {
		t.Errorf("env %v, want the API server's address and the node name kept", env)
	}
	if len(c.Ports) != 1 || c.Ports[0].ContainerPort != 24242 || c.StartupProbe.HTTPGet.Port.StrVal != "metrics" {
		t.Errorf("ports %+v, startup probe port %v", c.Ports, c.StartupProbe.HTTPGet.Port)
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	hostPaths := map[string]string{}
	for _, v := range pod.Volumes {
		if v.HostPath != nil {
			hostPaths[v.Name] = v.HostPath.Path
		}
	}
	for name, path := range map[string]string{"nri": bedDir, "probelet-run": bedDir + "/probelet-run",
		"probelet-state": bedDir + "/probelet-state", "btf": "/sys/kernel/btf"} {
		if mounts[name] != path || hostPaths[name] != path {
			t.Errorf("volume %s: host path %q mounted at %q, want %s at the same path", name, hostPaths[name], mounts[name], path)
		}
	}
	for name, path := range hostPaths {
		if strings.HasPrefix(path, "/run") || strings.HasPrefix(path, "/var/") {
			t.Errorf("volume %s still mounts the node's %s", name, path)
		}
	}
}
