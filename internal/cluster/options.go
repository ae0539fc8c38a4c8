package cluster

import (
	"errors"
	"time"
)

// Option configures Start.
type Option func(*Cluster) error

// WithCacheDir sets the build cache (default $PROBELET_TESTBED_CACHE, else
// /var/cache/probelet-testbed; shared with internal/testbed).
func WithCacheDir(dir string) Option {
	return func(c *Cluster) error { return c.scripts.SetCacheDir(dir) }
}

// WithScriptsDir sets where hack/cluster's scripts are (default: found from
// this package's source or by walking up from the working directory).
func WithScriptsDir(dir string) Option {
	return func(c *Cluster) error { return c.scripts.SetDir(dir) }
}

// WithStartTimeout bounds Start, including a cold build of Kubernetes
// (10-13 min on 2 cores; default 25 min).
func WithStartTimeout(d time.Duration) Option {
	return func(c *Cluster) error { return c.scripts.SetStartTimeout(d) }
}

// WithFeatureGates passes --feature-gates to the API server and the
// controller manager, e.g. "SomeGate=true,Other=false".
func WithFeatureGates(gates string) Option {
	return func(c *Cluster) error {
		c.featureGates = gates
		return nil
	}
}

// WithControllers sets kube-controller-manager's --controllers (default
// "*"). Tests without a kubelet may want "*,-podgc,-node-lifecycle-controller":
// those two delete or rewrite pods of nodes that never report.
func WithControllers(list string) Option {
	return func(c *Cluster) error {
		if list == "" {
			return errors.New("cluster: empty controller list")
		}
		c.controllers = list
		return nil
	}
}
