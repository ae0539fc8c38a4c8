package cluster

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/probelet/probelet/internal/testbed"
	"github.com/probelet/probelet/internal/testbed/harness"
)

// kubeletMarker marks a kubelet directory for hack/cluster/kubelet.sh.
const kubeletMarker = ".probelet-kubelet"

const kubeletRestartTimeout = 2 * time.Minute

// kubeletKind is how hack/cluster/kubelet.sh names, marks and tears down a
// kubelet's directory.
var kubeletKind = harness.Kind{
	Noun:   "kubelet",
	Prefix: "pkl-",
	Marker: kubeletMarker,
	Down:   []string{"kubelet.sh", "down"},
	Logs:   []harness.Log{{File: "kubelet.log", Lines: 30}},
}

// Kubelet is one running kubelet on a containerd test bed, registered to a
// Cluster or standalone. Its methods are safe for concurrent use.
type Kubelet struct {
	t       testing.TB
	scripts harness.Scripts
	owned   *harness.Owned

	mode, nodeName, nodeIP     string
	readOnlyURL, healthzURL    string
	criEndpoint, manifestsPath string
}

// StartKubelet starts a kubelet on bed, registered to c as a node (client
// certificate CN=system:node:NAME, O=system:nodes), waits until the Node is
// Ready and registers its teardown with t.Cleanup. Start it after the bed,
// so it is torn down before the bed.
func (c *Cluster) StartKubelet(t testing.TB, bed *testbed.Bed, opts ...KubeletOption) *Kubelet {
	t.Helper()
	return startKubelet(t, c.scripts, c.Dir(), bed, opts)
}

// StartStandaloneKubelet starts a kubelet on bed without an API server: it
// runs the static pods of ManifestDir and serves /pods and /metrics on its
// read-only port without authentication.
func StartStandaloneKubelet(t testing.TB, bed *testbed.Bed, opts ...KubeletOption) *Kubelet {
	t.Helper()
	harness.RequireRoot(t, "cluster: the kubelet")
	scripts := newScripts()
	if err := scripts.Locate(); err != nil {
		t.Fatalf("cluster: %v", err)
	}
	return startKubelet(t, scripts, "", bed, opts)
}

func startKubelet(t testing.TB, scripts harness.Scripts, clusterDir string, bed *testbed.Bed, opts []KubeletOption) *Kubelet {
	t.Helper()
	var cfg kubeletConfig
	for _, opt := range opts {
		if err := opt(&cfg); err != nil {
			t.Fatalf("cluster: %v", err)
		}
	}
	k := &Kubelet{t: t, scripts: scripts}
	if err := k.up(clusterDir, bed, cfg); err != nil {
		t.Fatalf("cluster: cannot start the kubelet: %v", err)
	}
	return k
}

func (k *Kubelet) up(clusterDir string, bed *testbed.Bed, cfg kubeletConfig) error {
	var err error
	if k.owned, err = harness.Claim(k.t, k.scripts, kubeletKind); err != nil {
		return err
	}
	dir := k.Dir()
	args := append([]string{"up", "--bed", bed.Dir()}, cfg.scriptArgs()...)
	if clusterDir != "" {
		args = append(args, "--cluster", clusterDir)
	}
	args = append(args, dir)
	if len(cfg.args) > 0 {
		args = append(append(args, "--"), cfg.args...)
	}
	began := time.Now()
	if _, err := k.scripts.Run(k.scripts.StartTimeout, "kubelet.sh", args...); err != nil {
		return err
	}
	env, err := harness.ReadEnvFile(filepath.Join(dir, "kubelet.env"))
	if err != nil {
		return err
	}
	k.mode, k.nodeName, k.nodeIP = env["MODE"], env["NODE_NAME"], env["NODE_IP"]
	k.readOnlyURL, k.healthzURL, k.criEndpoint = env["READONLY_URL"], env["HEALTHZ_URL"], env["CRI_ENDPOINT"]
	k.manifestsPath = filepath.Join(dir, "manifests")
	k.t.Logf("cluster: kubelet %s (%s) up in %v in %s", k.nodeName, k.mode, time.Since(began).Round(time.Millisecond), dir)
	return nil
}

// Stop tears the kubelet down: the process, mounts under its directory,
// its log symlinks, the host sysctls it changed (restored once no other
// kubelet of these scripts runs) and the directory. Its pods keep running
// in the bed (the bed's Stop removes them); its Node object stays.
// Idempotent; registered with t.Cleanup.
func (k *Kubelet) Stop() error { return k.owned.Stop() }

// StopProcess stops the kubelet process (SIGTERM, SIGKILL after 10 s) and
// keeps everything else, as when a node's kubelet goes away; containers
// keep running.
func (k *Kubelet) StopProcess() error {
	_, err := k.scripts.Run(kubeletRestartTimeout, "kubelet.sh", "stop", k.Dir())
	return err
}

// StartProcess starts the stopped kubelet again with the same
// configuration and waits until its healthz answers.
func (k *Kubelet) StartProcess() error {
	_, err := k.scripts.Run(kubeletRestartTimeout, "kubelet.sh", "start", k.Dir())
	return err
}

// Restart is StopProcess then StartProcess.
func (k *Kubelet) Restart() error {
	if err := k.StopProcess(); err != nil {
		return err
	}
	return k.StartProcess()
}

// ErrKubeletNotRunning is returned by PID when the kubelet is not running.
var ErrKubeletNotRunning = errors.New("cluster: the kubelet is not running")

// PID returns the kubelet's process ID.
func (k *Kubelet) PID() (int, error) {
	pid, err := harness.RunningPID(filepath.Join(k.Dir(), "kubelet.pid"), "")
	if errors.Is(err, harness.ErrNotRunning) {
		return 0, ErrKubeletNotRunning
	}
	return pid, err
}

// AddStaticPod writes a static pod manifest (YAML or JSON) as NAME.yaml
// into ManifestDir atomically, so the kubelet never reads half a file.
func (k *Kubelet) AddStaticPod(name string, manifest []byte) error {
	tmp, err := os.CreateTemp(k.manifestsPath, ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(manifest); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), filepath.Join(k.manifestsPath, name+".yaml"))
}

// RemoveStaticPod removes NAME.yaml from ManifestDir; the kubelet stops the pod.
func (k *Kubelet) RemoveStaticPod(name string) error {
	return os.Remove(filepath.Join(k.manifestsPath, name+".yaml"))
}

// Dir is the kubelet's directory (root dir, config, logs, pod logs).
func (k *Kubelet) Dir() string { return k.owned.Dir() }

// NodeName is the kubelet's node name.
func (k *Kubelet) NodeName() string { return k.nodeName }

// NodeIP is the node's InternalIP, the host's primary IPv4 address.
func (k *Kubelet) NodeIP() string { return k.nodeIP }

// Standalone reports whether the kubelet runs without an API server.
func (k *Kubelet) Standalone() bool { return k.mode == "standalone" }

// ReadOnlyURL is the read-only port's base URL (/pods, /metrics,
// /metrics/probes), http://ADDRESS:PORT without a trailing slash.
func (k *Kubelet) ReadOnlyURL() string { return k.readOnlyURL }

// HealthzURL is the kubelet's healthz endpoint on loopback.
func (k *Kubelet) HealthzURL() string { return k.healthzURL }

// CRIEndpoint is the --container-runtime-endpoint the kubelet uses.
func (k *Kubelet) CRIEndpoint() string { return k.criEndpoint }

// ManifestDir is the static pod directory (checked every second).
func (k *Kubelet) ManifestDir() string { return k.manifestsPath }

// LogPath is the kubelet's log file.
func (k *Kubelet) LogPath() string { return filepath.Join(k.Dir(), "kubelet.log") }
