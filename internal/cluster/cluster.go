package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/probelet/probelet/internal/testbed"
)

// clusterMarker marks a control plane directory; hack/cluster's scripts
// refuse to start in or delete a non-empty directory without it.
const clusterMarker = ".probelet-cluster"

// Components are the control plane's processes, as named by their PID and
// log files in the cluster directory.
var Components = []string{"etcd", "kube-apiserver", "kube-controller-manager"}

// Cluster is one running control plane. Its methods are safe for
// concurrent use.
type Cluster struct {
	t            testing.TB
	env          scriptEnv
	featureGates string
	controllers  string

	dir     string
	url     string
	kubectl string
	restCfg *rest.Config
	client  kubernetes.Interface

	mu      sync.Mutex
	stopped bool
}

// Start builds what is missing, starts a control plane in a fresh directory
// and registers its teardown with t.Cleanup. It never returns on failure:
// the test is failed (or, without root outside CI, skipped).
func Start(t testing.TB, opts ...Option) *Cluster {
	t.Helper()
	testbed.RequireRoot(t, "cluster: the control plane")
	c, err := newCluster(t, opts)
	if err != nil {
		t.Fatalf("cluster: %v", err)
	}
	if err := c.up(); err != nil {
		t.Fatalf("cluster: cannot start the control plane: %v", err)
	}
	return c
}

func newCluster(t testing.TB, opts []Option) (*Cluster, error) {
	c := &Cluster{t: t, env: defaultEnv(), controllers: "*"}
	for _, opt := range opts {
		if err := opt(c); err != nil {
			return nil, err
		}
	}
	if err := c.env.resolve(); err != nil {
		return nil, err
	}
	return c, nil
}

// up builds, picks a fresh directory, runs up.sh and connects a client.
func (c *Cluster) up() error {
	bins, err := c.env.build()
	if err != nil {
		return err
	}
	c.kubectl = bins["kubectl"]
	base := shortTempBase()
	if _, err := c.env.run(downTimeout, "gc.sh", base); err != nil {
		c.t.Logf("cluster: removing abandoned clusters: %v", err)
	}
	dir, err := os.MkdirTemp(base, "pkc-")
	if err != nil {
		return err
	}
	c.dir = dir
	// Registered before up.sh so a half-started control plane is torn down too.
	c.t.Cleanup(c.cleanup)
	if err := testbed.MarkOwned(dir, clusterMarker); err != nil {
		return err
	}
	c.t.Logf("cluster: starting the control plane in %s", dir)
	args := []string{"--controllers", c.controllers}
	if c.featureGates != "" {
		args = append(args, "--feature-gates", c.featureGates)
	}
	if _, err := c.env.run(c.env.startTimeout, "up.sh", append(args, dir)...); err != nil {
		return err
	}
	env, err := readEnvFile(filepath.Join(dir, "cluster.env"))
	if err != nil {
		return err
	}
	c.url = env["APISERVER_URL"]
	c.restCfg, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig())
	if err != nil {
		return fmt.Errorf("loading %s: %w", c.Kubeconfig(), err)
	}
	c.client, err = kubernetes.NewForConfig(c.restCfg)
	return err
}

// build runs build.sh, which prints where the binaries are.
func (e scriptEnv) build() (map[string]string, error) {
	out, err := e.run(e.startTimeout, "build.sh")
	if err != nil {
		return nil, err
	}
	bins := parseEnv(out)
	for _, name := range []string{"kubectl", "kubelet"} {
		if bins[name] == "" {
			return nil, fmt.Errorf("build.sh did not print %s=PATH:\n%s", name, out)
		}
	}
	return bins, nil
}

// cleanup is the t.Cleanup hook: it keeps a failed test's control plane
// when asked, shows the components' logs on failure and tears it down.
func (c *Cluster) cleanup() {
	c.mu.Lock()
	stopped := c.stopped
	c.mu.Unlock()
	if c.t.Failed() && !stopped {
		for _, name := range Components {
			c.t.Logf("cluster: last lines of %s.log:\n%s", name, fileTail(filepath.Join(c.dir, name+".log"), 15))
		}
		if keepOnFailure() {
			_ = os.Remove(filepath.Join(c.dir, "owner")) // kept ones are not gc.sh's to remove
			c.t.Logf("cluster: keeping %s; export KUBECONFIG=%s; remove it with %s %s",
				c.dir, c.Kubeconfig(), filepath.Join(c.env.scripts, "down.sh"), c.dir)
			return
		}
	}
	if err := c.Stop(); err != nil {
		c.t.Errorf("cluster: %v", err)
	}
}

// Stop stops the control plane (by PID) and removes its directory.
// Idempotent; Start registers it with t.Cleanup, so tests call it only to
// check the result. Stop kubelets registered to it first.
func (c *Cluster) Stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped || c.dir == "" {
		return nil
	}
	if _, err := c.env.run(downTimeout, "down.sh", c.dir); err != nil {
		return err
	}
	c.stopped = true
	return nil
}

// Dir is the cluster's directory: certificates, etcd data, logs, kubeconfigs.
func (c *Cluster) Dir() string { return c.dir }

// Kubeconfig is the admin kubeconfig (a client certificate in system:masters).
func (c *Cluster) Kubeconfig() string { return filepath.Join(c.dir, "admin.kubeconfig") }

// URL is the API server's URL, https://127.0.0.1:PORT.
func (c *Cluster) URL() string { return c.url }

// CAFile is the cluster CA's certificate, which signed the API server's.
func (c *Cluster) CAFile() string { return filepath.Join(c.dir, "pki", "ca.crt") }

// RESTConfig returns a copy of the admin client configuration.
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.restCfg) }

// Client is a clientset with the admin identity.
func (c *Cluster) Client() kubernetes.Interface { return c.client }

// LogPath is the log file of one of Components.
func (c *Cluster) LogPath(component string) string { return filepath.Join(c.dir, component+".log") }

// PIDs returns the running components' PIDs by name (for leak checks).
func (c *Cluster) PIDs() map[string]int {
	pids := map[string]int{}
	for _, name := range Components {
		data, err := os.ReadFile(filepath.Join(c.dir, name+".pid"))
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil {
			pids[name] = pid
		}
	}
	return pids
}
