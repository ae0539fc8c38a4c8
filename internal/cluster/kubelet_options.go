package cluster

import (
	"errors"
	"strings"
)

// KubeletOption configures StartKubelet and StartStandaloneKubelet.
type KubeletOption func(*kubeletConfig) error

type kubeletConfig struct {
	nodeName      string
	criEndpoint   string
	imageEndpoint string
	featureGates  string
	args          []string
}

// WithNodeName sets the node name (default probelet-<hash of its dir>).
func WithNodeName(name string) KubeletOption {
	return func(k *kubeletConfig) error {
		if name == "" || strings.ToLower(name) != name {
			return errors.New("cluster: node name must be a non-empty lower-case DNS name, got " + name)
		}
		k.nodeName = name
		return nil
	}
}

// WithCRIEndpoint sets the kubelet's --container-runtime-endpoint (default:
// the bed's containerd), e.g. the socket of a CRI proxy in front of it.
func WithCRIEndpoint(endpoint string) KubeletOption {
	return func(k *kubeletConfig) error {
		if !strings.HasPrefix(endpoint, "unix://") {
			return errors.New("cluster: CRI endpoint must be unix://PATH, got " + endpoint)
		}
		k.criEndpoint = endpoint
		return nil
	}
}

// WithImageEndpoint sets the kubelet's image service endpoint (default: the
// bed's containerd, also when WithCRIEndpoint points elsewhere).
func WithImageEndpoint(endpoint string) KubeletOption {
	return func(k *kubeletConfig) error {
		if !strings.HasPrefix(endpoint, "unix://") {
			return errors.New("cluster: image endpoint must be unix://PATH, got " + endpoint)
		}
		k.imageEndpoint = endpoint
		return nil
	}
}

// WithKubeletFeatureGates passes --feature-gates, e.g. "EventedPLEG=true".
func WithKubeletFeatureGates(gates string) KubeletOption {
	return func(k *kubeletConfig) error {
		k.featureGates = gates
		return nil
	}
}

// WithKubeletArgs appends raw kubelet flags, e.g. "--v=4"; they come after
// the generated ones, so they win.
func WithKubeletArgs(args ...string) KubeletOption {
	return func(k *kubeletConfig) error {
		for _, a := range args {
			if !strings.HasPrefix(a, "--") {
				return errors.New("cluster: kubelet args must be --flag[=value], got " + a)
			}
		}
		k.args = append(k.args, args...)
		return nil
	}
}

// scriptArgs turns the configuration into kubelet.sh up's options; the
// caller adds --bed, --cluster and the directory.
func (k kubeletConfig) scriptArgs() []string {
	var args []string
	for _, o := range []struct{ flag, val string }{
		{"--node", k.nodeName},
		{"--endpoint", k.criEndpoint},
		{"--image-endpoint", k.imageEndpoint},
		{"--feature-gates", k.featureGates},
	} {
		if o.val != "" {
			args = append(args, o.flag, o.val)
		}
	}
	return args
}
