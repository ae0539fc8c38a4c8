package cluster

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/probelet/probelet/internal/testbed/harness"
)

// defaultStartTimeout bounds a start including a cold build of Kubernetes.
const defaultStartTimeout = 25 * time.Minute

// clusterMarker marks a control plane directory; hack/cluster's scripts
// refuse to start in or delete a non-empty directory without it.
const clusterMarker = ".probelet-cluster"

// Components are the control plane's processes, as named by their PID and
// log files in the cluster directory.
var Components = []string{"etcd", "kube-apiserver", "kube-controller-manager"}

// clusterKind is how hack/cluster names, marks and tears down a control
// plane's directory.
var clusterKind = harness.Kind{
	Noun:     "control plane",
	Prefix:   "pkc-",
	Marker:   clusterMarker,
	Down:     []string{"down.sh"},
	Logs:     componentLogs(),
	KeepHint: func(dir string) string { return "export KUBECONFIG=" + kubeconfig(dir) },
}

func componentLogs() []harness.Log {
	var logs []harness.Log
	for _, name := range Components {
		logs = append(logs, harness.Log{File: name + ".log", Lines: 15})
	}
	return logs
}

// Cluster is one running control plane. Its methods are safe for
// concurrent use.
type Cluster struct {
	t            testing.TB
	scripts      harness.Scripts
	owned        *harness.Owned
	featureGates string
	controllers  string

	url     string
	kubectl string
	restCfg *rest.Config
	client  kubernetes.Interface
}

// Start builds what is missing, starts a control plane in a fresh directory
// and registers its teardown with t.Cleanup. It never returns on failure:
// the test is failed (or, without root outside CI, skipped).
func Start(t testing.TB, opts ...Option) *Cluster {
	t.Helper()
	harness.RequireRoot(t, "cluster: the control plane")
	c, err := newCluster(t, opts)
	if err != nil {
		t.Fatalf("cluster: %v", err)
	}
	if err := c.up(); err != nil {
		t.Fatalf("cluster: cannot start the control plane: %v", err)
	}
	return c
}

// newScripts is hack/cluster's scripts with the default cache.
func newScripts() harness.Scripts { return harness.NewScripts("cluster", defaultStartTimeout) }

func newCluster(t testing.TB, opts []Option) (*Cluster, error) {
	c := &Cluster{t: t, scripts: newScripts(), controllers: "*"}
	for _, opt := range opts {
		if err := opt(c); err != nil {
			return nil, err
		}
	}
	if err := c.scripts.Locate(); err != nil {
		return nil, err
	}
	return c, nil
}

// up builds, claims a fresh directory, runs up.sh and connects a client.
func (c *Cluster) up() error {
	bins, err := c.scripts.Build("kubectl", "kubelet")
	if err != nil {
		return err
	}
	c.kubectl = bins["kubectl"]
	if c.owned, err = harness.Claim(c.t, c.scripts, clusterKind); err != nil {
		return err
	}
	c.t.Logf("cluster: starting the control plane in %s", c.Dir())
	if err := c.runUp(); err != nil {
		return err
	}
	env, err := harness.ReadEnvFile(filepath.Join(c.Dir(), "cluster.env"))
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

// Stop stops the control plane (by PID) and removes its directory.
// Idempotent; Start registers it with t.Cleanup, so tests call it only to
// check the result. Stop kubelets registered to it first.
func (c *Cluster) Stop() error { return c.owned.Stop() }

// Dir is the cluster's directory: certificates, etcd data, logs, kubeconfigs.
func (c *Cluster) Dir() string { return c.owned.Dir() }

// Kubeconfig is the admin kubeconfig (a client certificate in system:masters).
func (c *Cluster) Kubeconfig() string { return kubeconfig(c.Dir()) }

func kubeconfig(dir string) string { return filepath.Join(dir, "admin.kubeconfig") }

// URL is the API server's URL, https://127.0.0.1:PORT.
func (c *Cluster) URL() string { return c.url }

// CAFile is the cluster CA's certificate, which signed the API server's.
func (c *Cluster) CAFile() string { return filepath.Join(c.Dir(), "pki", "ca.crt") }

// RESTConfig returns a copy of the admin client configuration.
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.restCfg) }

// Client is a clientset with the admin identity.
func (c *Cluster) Client() kubernetes.Interface { return c.client }

// LogPath is the log file of one of Components.
func (c *Cluster) LogPath(component string) string { return filepath.Join(c.Dir(), component+".log") }

// PIDs returns the running components' PIDs by name (for leak checks).
func (c *Cluster) PIDs() map[string]int {
	pids := map[string]int{}
	for _, name := range Components {
		if pid, err := harness.ReadPID(filepath.Join(c.Dir(), name+".pid")); err == nil {
			pids[name] = pid
		}
	}
	return pids
}
