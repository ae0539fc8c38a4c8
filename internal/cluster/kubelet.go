package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/probelet/probelet/internal/testbed"
)

// kubeletMarker marks a kubelet directory for hack/cluster/kubelet.sh.
const kubeletMarker = ".probelet-kubelet"

const kubeletRestartTimeout = 2 * time.Minute

// Kubelet is one running kubelet on a containerd test bed, registered to a
// Cluster or standalone. Its methods are safe for concurrent use.
type Kubelet struct {
	t   testing.TB
	env scriptEnv
	dir string

	mode, nodeName, nodeIP     string
	readOnlyURL, healthzURL    string
	criEndpoint, manifestsPath string

	mu      sync.Mutex
	stopped bool
}

// StartKubelet starts a kubelet on bed, registered to c as a node (client
// certificate CN=system:node:NAME, O=system:nodes), waits until the Node is
// Ready and registers its teardown with t.Cleanup. Start it after the bed,
// so it is torn down before the bed.
func (c *Cluster) StartKubelet(t testing.TB, bed *testbed.Bed, opts ...KubeletOption) *Kubelet {
	t.Helper()
	return startKubelet(t, c.env, c.dir, bed, opts)
}

// StartStandaloneKubelet starts a kubelet on bed without an API server: it
// runs the static pods of ManifestDir and serves /pods and /metrics on its
// read-only port without authentication.
func StartStandaloneKubelet(t testing.TB, bed *testbed.Bed, opts ...KubeletOption) *Kubelet {
	t.Helper()
	testbed.RequireRoot(t, "cluster: the kubelet")
	env := defaultEnv()
	if err := env.resolve(); err != nil {
		t.Fatalf("cluster: %v", err)
	}
	return startKubelet(t, env, "", bed, opts)
}

func startKubelet(t testing.TB, env scriptEnv, clusterDir string, bed *testbed.Bed, opts []KubeletOption) *Kubelet {
	t.Helper()
	var cfg kubeletConfig
	for _, opt := range opts {
		if err := opt(&cfg); err != nil {
			t.Fatalf("cluster: %v", err)
		}
	}
	k := &Kubelet{t: t, env: env}
	if err := k.up(clusterDir, bed, cfg); err != nil {
		t.Fatalf("cluster: cannot start the kubelet: %v", err)
	}
	return k
}

func (k *Kubelet) up(clusterDir string, bed *testbed.Bed, cfg kubeletConfig) error {
	base := shortTempBase()
	if _, err := k.env.run(downTimeout, "gc.sh", base); err != nil {
		k.t.Logf("cluster: removing abandoned kubelets: %v", err)
	}
	dir, err := os.MkdirTemp(base, "pkl-")
	if err != nil {
		return err
	}
	k.dir = dir
	// Registered before kubelet.sh so a half-started kubelet is torn down too.
	k.t.Cleanup(k.cleanup)
	if err := testbed.MarkOwned(dir, kubeletMarker); err != nil {
		return err
	}
	args := append([]string{"up", "--bed", bed.Dir()}, cfg.scriptArgs()...)
	if clusterDir != "" {
		args = append(args, "--cluster", clusterDir)
	}
	args = append(args, dir)
	if len(cfg.args) > 0 {
		args = append(append(args, "--"), cfg.args...)
	}
	began := time.Now()
	if _, err := k.env.run(k.env.startTimeout, "kubelet.sh", args...); err != nil {
		return err
	}
	env, err := readEnvFile(filepath.Join(dir, "kubelet.env"))
	if err != nil {
		return err
	}
	k.mode, k.nodeName, k.nodeIP = env["MODE"], env["NODE_NAME"], env["NODE_IP"]
	k.readOnlyURL, k.healthzURL, k.criEndpoint = env["READONLY_URL"], env["HEALTHZ_URL"], env["CRI_ENDPOINT"]
	k.manifestsPath = filepath.Join(dir, "manifests")
	k.t.Logf("cluster: kubelet %s (%s) up in %v in %s", k.nodeName, k.mode, time.Since(began).Round(time.Millisecond), dir)
	return nil
}

// cleanup is the t.Cleanup hook: it keeps a failed test's kubelet when
// asked, shows its log on failure and tears it down.
func (k *Kubelet) cleanup() {
	k.mu.Lock()
	stopped := k.stopped
	k.mu.Unlock()
	if k.t.Failed() && !stopped {
		k.t.Logf("cluster: last lines of %s:\n%s", k.LogPath(), fileTail(k.LogPath(), 30))
		if keepOnFailure() {
			_ = os.Remove(filepath.Join(k.dir, "owner")) // kept ones are not gc.sh's to remove
			k.t.Logf("cluster: keeping kubelet %s; remove it with %s down %s", k.dir, filepath.Join(k.env.scripts, "kubelet.sh"), k.dir)
			return
		}
	}
	if err := k.Stop(); err != nil {
		k.t.Errorf("cluster: %v", err)
	}
}

// Stop tears the kubelet down: the process, mounts under its directory,
// its log symlinks, the host sysctls it changed (restored once no other
// kubelet of these scripts runs) and the directory. Its pods keep running
// in the bed (the bed's Stop removes them); its Node object stays.
// Idempotent; registered with t.Cleanup.
func (k *Kubelet) Stop() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopped || k.dir == "" {
		return nil
	}
	if _, err := k.env.run(downTimeout, "kubelet.sh", "down", k.dir); err != nil {
		return err
	}
	k.stopped = true
	return nil
}

// StopProcess stops the kubelet process (SIGTERM, SIGKILL after 10 s) and
// keeps everything else, as when a node's kubelet goes away; containers
// keep running.
func (k *Kubelet) StopProcess() error {
	_, err := k.env.run(kubeletRestartTimeout, "kubelet.sh", "stop", k.dir)
	return err
}

// StartProcess starts the stopped kubelet again with the same
// configuration and waits until its healthz answers.
func (k *Kubelet) StartProcess() error {
	_, err := k.env.run(kubeletRestartTimeout, "kubelet.sh", "start", k.dir)
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
	data, err := os.ReadFile(filepath.Join(k.dir, "kubelet.pid"))
	if err != nil {
		return 0, ErrKubeletNotRunning
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return 0, fmt.Errorf("cluster: bad kubelet.pid: %w", err)
	}
	if !testbed.Alive(pid) {
		return 0, ErrKubeletNotRunning
	}
	return pid, nil
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
func (k *Kubelet) Dir() string { return k.dir }

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
func (k *Kubelet) LogPath() string { return filepath.Join(k.dir, "kubelet.log") }
