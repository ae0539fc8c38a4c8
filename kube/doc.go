// Package kube is probelet's API server side: what it reads (pod specs of
// this node: kube/podwatch) and what it writes (the probelet.io/ready pod
// condition: kube/readiness; kubelet-style Events: kube/events). All of it
// is optional: without a kubeconfig or an in-cluster configuration
// probelet runs node-only. This package makes the client: a narrow one
// (client.go), not client-go's clientset.
package kube

import (
	"errors"
	"fmt"
	"os"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// The client's rate limits, the kubelet's defaults (kubeAPIQPS, kubeAPIBurst):
// a node's status writes and events must not queue behind client-go's 5/s.
const (
	clientQPS   = 50
	clientBurst = 100
)

// ErrNoConfig says there is neither a kubeconfig nor an in-cluster
// configuration: probelet runs node-only.
var ErrNoConfig = errors.New("no kubeconfig and not running in a cluster")

// Config returns the API server configuration: the kubeconfig file when
// one is given, else the in-cluster configuration (a pod's service account),
// else ErrNoConfig.
func Config(kubeconfig string) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	switch {
	case kubeconfig != "":
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
		}
	case os.Getenv("KUBERNETES_SERVICE_HOST") != "":
		cfg, err = rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("in-cluster configuration: %w", err)
		}
	default:
		return nil, ErrNoConfig
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = clientQPS, clientBurst
	cfg.Timeout = DefaultRequestTimeout // NewClient puts it on each call but watches
	cfg.UserAgent = "probelet"
	return cfg, nil
}
