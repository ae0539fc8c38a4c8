// Package kubeconfig is the one reading of a kubeconfig (or a pod's
// in-cluster configuration) into a client configuration, for the node agent
// (kube/) and probelet-controller alike, with the kubelet's rate limits.
package kubeconfig

import (
	"errors"
	"fmt"
	"os"
	"time"

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
// configuration: the caller runs without the API server.
var ErrNoConfig = errors.New("no kubeconfig and not running in a cluster")

// RequestTimeout bounds an API call.
const RequestTimeout = 10 * time.Second

// Load returns the API server configuration: the kubeconfig file when
// one is given, else the in-cluster configuration (a pod's service account),
// else ErrNoConfig.
func Load(kubeconfig string) (*rest.Config, error) {
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
	cfg.Timeout = RequestTimeout // kube.NewClient puts it on each call but watches
	cfg.UserAgent = "probelet"
	return cfg, nil
}
