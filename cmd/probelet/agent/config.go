// Package agent builds and runs the whole probelet daemon from a Config:
// the probe engine, the node cache, the NRI plugin, the CRI client, the
// safety reconcile, the metrics and health endpoint, and (when one is
// given) the socket server. cmd/probelet's main and the e2e tests share it.
package agent

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path"
	"strings"
	"time"

	"github.com/containerd/nri/pkg/api"
	"k8s.io/apimachinery/pkg/util/validation"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/probelet/probelet/cri/client"
	"github.com/probelet/probelet/internal/endpoint"
	"github.com/probelet/probelet/killguard"
	"github.com/probelet/probelet/plugin"
	"github.com/probelet/probelet/probespec"
	"github.com/probelet/probelet/quietio"
)

// Config is the daemon's configuration; a config file (YAML or JSON) sets
// the same keys as the flags, in camelCase.
type Config struct {
	// NRISocket is the runtime's NRI socket (--nri-socket).
	NRISocket string `json:"nriSocket,omitempty"`
	// PluginIndex orders probelet among NRI plugins, two digits (--plugin-index).
	PluginIndex string `json:"pluginIndex,omitempty"`
	// RuntimeEndpoint is containerd's CRI socket, unix:///path (--runtime-endpoint).
	RuntimeEndpoint string `json:"runtimeEndpoint,omitempty"`
	// Listen is probelet's own socket, unix:///path (--listen).
	Listen string `json:"listen,omitempty"`
	// MetricsBindAddress serves /metrics and /healthz, HOST:PORT; empty
	// turns the endpoint off (--metrics-bind-address).
	MetricsBindAddress string `json:"metricsBindAddress,omitempty"`
	// TCPMode picks who answers TCP probes: auto, ebpf or dial (--tcp-mode).
	TCPMode string `json:"tcpMode,omitempty"`
	// IO picks who does the probes' network I/O and timing: quiet
	// (probelet's own) or std (net, net/http, grpc-go and Go timers) (--io).
	IO string `json:"io,omitempty"`
	// TCPVerify double-checks eBPF answers with a dial (--tcp-verify).
	TCPVerify bool `json:"tcpVerify,omitempty"`
	// LivenessAction is restart (kill like the kubelet) or report (--liveness-action).
	LivenessAction string `json:"livenessAction,omitempty"`
	// KillGuard is on (hold liveness and startup kills back when many
	// probes fail at once) or off (kill exactly like the kubelet) (--kill-guard).
	KillGuard string `json:"killGuard,omitempty"`
	// The kill guard's policy (--kill-guard-*; README "Kill guard").
	KillGuardRate               float64  `json:"killGuardRate,omitempty"`
	KillGuardBurst              int      `json:"killGuardBurst,omitempty"`
	KillGuardSecondaryRate      float64  `json:"killGuardSecondaryRate,omitempty"`
	KillGuardPartialThreshold   float64  `json:"killGuardPartialThreshold,omitempty"`
	KillGuardUnhealthyThreshold float64  `json:"killGuardUnhealthyThreshold,omitempty"`
	KillGuardMinFailing         int      `json:"killGuardMinFailing,omitempty"`
	KillGuardCeiling            Duration `json:"killGuardCeiling,omitempty"`
	// ReconcileInterval paces the CRI safety reconcile; 0 turns it off
	// (--reconcile-interval).
	ReconcileInterval Duration `json:"reconcileInterval,omitempty"`
	// StateDir keeps what must survive a restart: probe events and the
	// restarts probelet issued (--state-dir); empty keeps nothing.
	StateDir string `json:"stateDir,omitempty"`
	// Kubeconfig connects probelet to the API server (--kubeconfig); empty
	// uses the in-cluster configuration when there is one, else probelet
	// runs node-only.
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// NodeName is this node's name in the API server (--node-name; the
	// DaemonSet passes NODE_NAME from the downward API). Default: the
	// hostname, lower-cased, like the kubelet's.
	NodeName string `json:"nodeName,omitempty"`
	// LeaseNamespace holds the node Lease probelet renews while probing,
	// named after the node (--lease-namespace).
	LeaseNamespace string `json:"leaseNamespace,omitempty"`
	// LeaseRenewInterval is how often that Lease is renewed
	// (--lease-renew-interval); probelet-controller's
	// --lease-renew-interval and --grace-period go with it.
	LeaseRenewInterval Duration `json:"leaseRenewInterval,omitempty"`
	// LogFormat is console or json (--log-format).
	LogFormat string `json:"logFormat,omitempty"`
	// LogLevel is debug, info, warn or error (--log-level).
	LogLevel string `json:"logLevel,omitempty"`
	// CRIProxyListen and CRIProxyVerify are refused with an error that
	// names `probelet cri-proxy`, which took them over: the CRI proxy runs
	// in its own process (--cri-proxy-listen, --cri-proxy-verify).
	CRIProxyListen string `json:"criProxyListen,omitempty"`
	CRIProxyVerify bool   `json:"criProxyVerify,omitempty"`
	// ExecMode picks who runs exec probes: runtime (CRI ExecSync) or
	// direct (probelet's helper, falling back to ExecSync for any container
	// it cannot serve exactly as the runtime) (--exec-mode).
	ExecMode string `json:"execMode,omitempty"`
	// RuntimeStateDir is containerd's state directory, where direct exec
	// reads the containers' OCI bundles (--runtime-state-dir); empty:
	// learned from containerd (its CRI status), else /run/containerd.
	RuntimeStateDir string `json:"runtimeStateDir,omitempty"`
	// ExecHelper is the direct exec helper binary; empty: probelet-exec
	// next to the probelet binary (--exec-helper).
	ExecHelper string `json:"execHelper,omitempty"`
	// AllowProbeHost are CIDRs (or single IPs) a probe's host may name
	// besides its own pod's IPs (--allow-probe-host, repeatable); hostnames
	// are never allowed by them. Default none.
	AllowProbeHost []string `json:"allowProbeHost,omitempty"`
	// ProbeOrigin is where HTTP, gRPC and TCP-dial probes connect from for
	// pods that do not say (probelet.io/probe-origin): "node", the
	// kubelet's way, or "pod", the pod's own network namespace
	// (--probe-origin).
	ProbeOrigin string `json:"probeOrigin,omitempty"`
	// StateListen is HOST:PORT where the probe-state API (probelet-controller)
	// reads this node's probe state over TLS, each call authenticated and
	// authorised by the API server (--state-listen); empty turns it off.
	// It needs the API server.
	StateListen string `json:"stateListen,omitempty"`
}

// Default returns the defaults of DESIGN.md and the deploy manifests.
func Default() Config {
	guard := killguard.Default()
	return Config{
		NRISocket:          plugin.DefaultSocketPath,
		PluginIndex:        plugin.DefaultIndex,
		RuntimeEndpoint:    client.DefaultEndpoint,
		Listen:             "unix:///run/probelet/probelet.sock",
		MetricsBindAddress: "127.0.0.1:9809",
		TCPMode:            "auto",
		IO:                 quietio.Quiet,
		LivenessAction:     "restart",
		KillGuard:          "on",

		KillGuardRate:               guard.Rate,
		KillGuardBurst:              guard.Burst,
		KillGuardSecondaryRate:      guard.SecondaryRate,
		KillGuardPartialThreshold:   guard.PartialThreshold,
		KillGuardUnhealthyThreshold: guard.UnhealthyThreshold,
		KillGuardMinFailing:         guard.MinFailing,
		KillGuardCeiling:            Duration{guard.Ceiling},

		ExecMode:           "runtime",
		ReconcileInterval:  Duration{5 * time.Minute},
		ProbeOrigin:        string(probespec.OriginNode),
		StateDir:           "/var/lib/probelet",
		NodeName:           defaultNodeName(),
		LeaseNamespace:     probespec.LeaseNamespace,
		LeaseRenewInterval: Duration{probespec.LeaseRenewInterval},
		LogFormat:          "console",
		LogLevel:           "info",
	}
}

// LoadFile reads a YAML or JSON config file over base: keys the file sets
// win, the others keep base's values. Unknown, duplicate or mis-cased keys
// and values of the wrong type are errors naming the key.
func LoadFile(file string, base Config) (Config, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return base, fmt.Errorf("config file: %w", err)
	}
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return base, fmt.Errorf("config file %s: %w", file, err)
	}
	cfg := base
	strict, err := sigsjson.UnmarshalStrict(js, &cfg)
	if err == nil {
		err = errors.Join(strict...)
	}
	if err != nil {
		return base, fmt.Errorf("config file %s: %w", file, err)
	}
	return cfg, nil
}

// Validate reports every invalid setting, naming its flag.
func (c Config) Validate() error {
	var errs []error
	check := func(flag string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("--%s: %w", flag, err))
		}
	}
	check("nri-socket", absPath(c.NRISocket))
	check("plugin-index", api.CheckPluginIndex(c.PluginIndex))
	check("runtime-endpoint", unixEndpoint(c.RuntimeEndpoint))
	check("listen", unixEndpoint(c.Listen))
	check("metrics-bind-address", hostPort(c.MetricsBindAddress))
	check("tcp-mode", oneOf(c.TCPMode, "auto", "ebpf", "dial"))
	check("io", oneOf(c.IO, quietio.Quiet, quietio.Std))
	check("liveness-action", oneOf(c.LivenessAction, "restart", "report"))
	check("kill-guard", oneOf(c.KillGuard, "on", "off"))
	check("exec-mode", oneOf(c.ExecMode, "runtime", "direct"))
	if c.RuntimeStateDir != "" {
		check("runtime-state-dir", absPath(c.RuntimeStateDir))
	}
	if c.ExecHelper != "" {
		check("exec-helper", absPath(c.ExecHelper))
	}
	errs = append(errs, c.killGuardErrors()...)
	check("log-format", oneOf(c.LogFormat, "console", "json"))
	check("log-level", oneOf(c.LogLevel, "debug", "info", "warn", "error"))
	if c.StateDir != "" {
		check("state-dir", absPath(c.StateDir))
	}
	if c.NodeName == "" {
		check("node-name", errors.New("is empty and the hostname is unknown"))
	}
	if bad := validation.IsDNS1123Label(c.LeaseNamespace); len(bad) > 0 {
		check("lease-namespace", fmt.Errorf("%q is not a namespace name: %s", c.LeaseNamespace, strings.Join(bad, "; ")))
	}
	check("state-listen", hostPort(c.StateListen))
	check("cri-proxy-listen", c.validateProxyListen())
	check("cri-proxy-verify", c.validateProxyVerify())
	_, err := c.ProbeHostCIDRs()
	check("allow-probe-host", err)
	_, err = probespec.ParseOrigin(c.ProbeOrigin)
	check("probe-origin", err)
	check("lease-renew-interval", probespec.CheckLeaseRenewInterval(c.LeaseRenewInterval.Duration))
	if c.ReconcileInterval.Duration < 0 {
		check("reconcile-interval", fmt.Errorf("%s is negative (0 turns the reconcile off)", c.ReconcileInterval.Duration))
	}
	return errors.Join(errs...)
}

// ProbeHostCIDRs parses AllowProbeHost; a single IP is its own /32 or /128.
func (c Config) ProbeHostCIDRs() ([]netip.Prefix, error) {
	var out []netip.Prefix
	var errs []error
	for _, s := range c.AllowProbeHost {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			addr, aerr := netip.ParseAddr(s)
			if aerr != nil || addr.Zone() != "" {
				errs = append(errs, fmt.Errorf("%q is not a CIDR or an IP address", s))
				continue
			}
			p = netip.PrefixFrom(addr.Unmap(), addr.Unmap().BitLen())
		}
		out = append(out, p.Masked())
	}
	return out, errors.Join(errs...)
}

// KillGuardConfig is the kill guard's policy from the --kill-guard-* settings.
func (c Config) KillGuardConfig() killguard.Config {
	return killguard.Config{
		Rate: c.KillGuardRate, Burst: c.KillGuardBurst, SecondaryRate: c.KillGuardSecondaryRate,
		PartialThreshold: c.KillGuardPartialThreshold, UnhealthyThreshold: c.KillGuardUnhealthyThreshold,
		MinFailing: c.KillGuardMinFailing, Ceiling: c.KillGuardCeiling.Duration,
	}
}

// killGuardErrors names the flag of each invalid kill guard setting.
func (c Config) killGuardErrors() []error {
	var errs []error
	for _, f := range killguard.Check(c.KillGuardConfig()) {
		errs = append(errs, fmt.Errorf("--kill-guard-%s: %w", f.Setting, f.Err))
	}
	return errs
}

func absPath(p string) error {
	if !path.IsAbs(p) {
		return fmt.Errorf("%q is not an absolute path", p)
	}
	return nil
}

func unixEndpoint(e string) error {
	_, err := endpoint.UnixPath(e)
	return err
}

func hostPort(a string) error {
	if a == "" {
		return nil
	}
	if _, _, err := net.SplitHostPort(a); err != nil {
		return fmt.Errorf("%q is not HOST:PORT: %w", a, err)
	}
	return nil
}

func oneOf(v string, allowed ...string) error {
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return fmt.Errorf("%q is not one of %s", v, strings.Join(allowed, ", "))
}

// defaultNodeName is the kubelet's default: the hostname, lower-cased.
func defaultNodeName() string {
	h, err := os.Hostname()
	if err != nil {
		return ""
	}
	return strings.ToLower(strings.TrimSpace(h))
}
