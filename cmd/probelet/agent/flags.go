package agent

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
)

// Flags are the daemon's command-line flags. Only flags that were set
// override the config file, which overrides the defaults.
type Flags struct {
	configFile string
	values     Config
}

// NewFlags returns flags whose defaults are Default().
func NewFlags() *Flags { return &Flags{values: Default()} }

// flagFields copies each flag's value into a Config.
var flagFields = map[string]func(dst *Config, src Config){
	"nri-socket":                func(d *Config, s Config) { d.NRISocket = s.NRISocket },
	"plugin-index":              func(d *Config, s Config) { d.PluginIndex = s.PluginIndex },
	"runtime-endpoint":          func(d *Config, s Config) { d.RuntimeEndpoint = s.RuntimeEndpoint },
	"listen":                    func(d *Config, s Config) { d.Listen = s.Listen },
	"metrics-bind-address":      func(d *Config, s Config) { d.MetricsBindAddress = s.MetricsBindAddress },
	"tcp-mode":                  func(d *Config, s Config) { d.TCPMode = s.TCPMode },
	"tcp-verify":                func(d *Config, s Config) { d.TCPVerify = s.TCPVerify },
	"io":                        func(d *Config, s Config) { d.IO = s.IO },
	"liveness-action":           func(d *Config, s Config) { d.LivenessAction = s.LivenessAction },
	"kill-guard":                func(d *Config, s Config) { d.KillGuard = s.KillGuard },
	"kill-guard-rate":           func(d *Config, s Config) { d.KillGuardRate = s.KillGuardRate },
	"kill-guard-burst":          func(d *Config, s Config) { d.KillGuardBurst = s.KillGuardBurst },
	"kill-guard-secondary-rate": func(d *Config, s Config) { d.KillGuardSecondaryRate = s.KillGuardSecondaryRate },
	"kill-guard-partial-threshold": func(d *Config, s Config) {
		d.KillGuardPartialThreshold = s.KillGuardPartialThreshold
	},
	"kill-guard-unhealthy-threshold": func(d *Config, s Config) {
		d.KillGuardUnhealthyThreshold = s.KillGuardUnhealthyThreshold
	},
	"kill-guard-min-failing": func(d *Config, s Config) { d.KillGuardMinFailing = s.KillGuardMinFailing },
	"kill-guard-ceiling":     func(d *Config, s Config) { d.KillGuardCeiling = s.KillGuardCeiling },
	"reconcile-interval":     func(d *Config, s Config) { d.ReconcileInterval = s.ReconcileInterval },
	"state-dir":              func(d *Config, s Config) { d.StateDir = s.StateDir },
	"kubeconfig":             func(d *Config, s Config) { d.Kubeconfig = s.Kubeconfig },
	"node-name":              func(d *Config, s Config) { d.NodeName = s.NodeName },
	"lease-namespace":        func(d *Config, s Config) { d.LeaseNamespace = s.LeaseNamespace },
	"lease-renew-interval":   func(d *Config, s Config) { d.LeaseRenewInterval = s.LeaseRenewInterval },
	"log-format":             func(d *Config, s Config) { d.LogFormat = s.LogFormat },
	"log-level":              func(d *Config, s Config) { d.LogLevel = s.LogLevel },
	"cri-proxy-listen":       func(d *Config, s Config) { d.CRIProxyListen = s.CRIProxyListen },
	"cri-proxy-verify":       func(d *Config, s Config) { d.CRIProxyVerify = s.CRIProxyVerify },
	"exec-mode":              func(d *Config, s Config) { d.ExecMode = s.ExecMode },
	"runtime-state-dir":      func(d *Config, s Config) { d.RuntimeStateDir = s.RuntimeStateDir },
	"exec-helper":            func(d *Config, s Config) { d.ExecHelper = s.ExecHelper },
	"allow-probe-host":       func(d *Config, s Config) { d.AllowProbeHost = s.AllowProbeHost },
	"state-listen":           func(d *Config, s Config) { d.StateListen = s.StateListen },
	"probe-origin":           func(d *Config, s Config) { d.ProbeOrigin = s.ProbeOrigin },
}

// Bind defines the flags on fs.
func (f *Flags) Bind(fs *pflag.FlagSet) {
	v := &f.values
	fs.StringVar(&f.configFile, "config", "", "YAML or JSON file setting the same keys as the flags (camelCase: nriSocket, tcpMode, ...); flags win")
	fs.StringVar(&v.NRISocket, "nri-socket", v.NRISocket, "containerd's NRI socket")
	fs.StringVar(&v.PluginIndex, "plugin-index", v.PluginIndex, "NRI plugin index, two digits")
	fs.StringVar(&v.RuntimeEndpoint, "runtime-endpoint", v.RuntimeEndpoint, "containerd's CRI socket, unix:///path")
	fs.StringVar(&v.Listen, "listen", v.Listen, "probelet's CRI-style socket, unix:///path")
	fs.StringVar(&v.MetricsBindAddress, "metrics-bind-address", v.MetricsBindAddress, "HOST:PORT serving /metrics and /healthz; empty turns it off")
	fs.StringVar(&v.TCPMode, "tcp-mode", v.TCPMode, "who answers TCP probes: auto, ebpf or dial")
	fs.StringVar(&v.IO, "io", v.IO, "who does the probes' network I/O and timing: quiet (probelet's own, on the probing goroutine) or std (net, net/http, grpc-go and Go timers: the libraries' answers at the libraries' cost; README \"The quiet I/O\")")
	fs.BoolVar(&v.TCPVerify, "tcp-verify", v.TCPVerify, "also dial to verify eBPF TCP answers")
	fs.StringVar(&v.LivenessAction, "liveness-action", v.LivenessAction, "on liveness/startup failure: restart (like the kubelet) or report")
	fs.StringVar(&v.KillGuard, "kill-guard", v.KillGuard, "on: hold liveness and startup kills back when many probes fail at once (README \"Kill guard\"); off: kill exactly like the kubelet")
	fs.Float64Var(&v.KillGuardRate, "kill-guard-rate", v.KillGuardRate, "kills per second on a Normal node, after the burst")
	fs.IntVar(&v.KillGuardBurst, "kill-guard-burst", v.KillGuardBurst, "kills that go at once on a Normal node")
	fs.Float64Var(&v.KillGuardSecondaryRate, "kill-guard-secondary-rate", v.KillGuardSecondaryRate, "kills per second in a PartialDisruption; 0 pauses them")
	fs.Float64Var(&v.KillGuardPartialThreshold, "kill-guard-partial-threshold", v.KillGuardPartialThreshold, "share of liveness-probed pods failing (a probe at its failureThreshold) that makes a PartialDisruption")
	fs.Float64Var(&v.KillGuardUnhealthyThreshold, "kill-guard-unhealthy-threshold", v.KillGuardUnhealthyThreshold, "share of liveness-probed pods failing (a probe at its failureThreshold) that makes a FullDisruption (kills pause)")
	fs.IntVar(&v.KillGuardMinFailing, "kill-guard-min-failing", v.KillGuardMinFailing, "fewest failing liveness probes that make a disruption")
	fs.DurationVar(&v.KillGuardCeiling.Duration, "kill-guard-ceiling", v.KillGuardCeiling.Duration, "longest any kill waits")
	fs.DurationVar(&v.ReconcileInterval.Duration, "reconcile-interval", v.ReconcileInterval.Duration, "CRI safety reconcile period; 0 turns it off")
	fs.StringVar(&v.StateDir, "state-dir", v.StateDir, "directory for what survives a restart (probe events, restarts issued); empty keeps nothing")
	fs.StringVar(&v.Kubeconfig, "kubeconfig", v.Kubeconfig, "kubeconfig of the API server (pod conditions, Events, pod specs); empty: in-cluster config if any, else node-only")
	fs.StringVar(&v.NodeName, "node-name", v.NodeName, "this node's name in the API server (default: the hostname)")
	fs.StringVar(&v.LeaseNamespace, "lease-namespace", v.LeaseNamespace, "namespace of the node Lease probelet renews while it probes (probelet-controller marks the pods of a node whose Lease went silent)")
	fs.DurationVar(&v.LeaseRenewInterval.Duration, "lease-renew-interval", v.LeaseRenewInterval.Duration, "how often the node Lease is renewed while probing; set probelet-controller's --lease-renew-interval to the same and its --grace-period above it")
	fs.StringVar(&v.LogFormat, "log-format", v.LogFormat, "console or json")
	fs.StringVar(&v.LogLevel, "log-level", v.LogLevel, "debug, info, warn or error")
	fs.StringVar(&v.CRIProxyListen, "cri-proxy-listen", v.CRIProxyListen, "removed: the CRI proxy runs as its own process, `probelet cri-proxy --listen`")
	fs.BoolVar(&v.CRIProxyVerify, "cri-proxy-verify", v.CRIProxyVerify, "removed: the CRI proxy's shadow mode is `probelet cri-proxy --verify`")
	// Refused with an error that names `probelet cri-proxy`: not in --help.
	_ = fs.MarkHidden("cri-proxy-listen")
	_ = fs.MarkHidden("cri-proxy-verify")
	fs.StringVar(&v.ExecMode, "exec-mode", v.ExecMode, "who runs exec probes: runtime (CRI ExecSync) or direct (probelet's helper, with the container's exact confinement; any container it cannot serve so goes to the runtime)")
	fs.StringVar(&v.RuntimeStateDir, "runtime-state-dir", v.RuntimeStateDir, "containerd's state directory (its OCI bundles, for --exec-mode direct); empty: learned from containerd's CRI status, else /run/containerd")
	fs.StringVar(&v.ExecHelper, "exec-helper", v.ExecHelper, "the direct exec helper binary (default: probelet-exec next to probelet)")
	fs.StringVar(&v.StateListen, "state-listen", v.StateListen, "HOST:PORT serving this node's probe state to the probe-state API (probes.probelet.io) over TLS, pinned through the node Lease, each read reviewed by the API server; empty turns it off (README \"Probe state for cluster users\")")
	fs.StringVar(&v.ProbeOrigin, "probe-origin", v.ProbeOrigin, "where HTTP, gRPC and TCP-dial probes connect from unless a pod's probelet.io/probe-origin says: node (the kubelet's way) or pod (the pod's own network namespace; README \"Probe origin\")")
	fs.StringArrayVar(&v.AllowProbeHost, "allow-probe-host", v.AllowProbeHost, "CIDR (or IP) a probe's httpGet/tcpSocket host may name besides its pod's own IPs; repeatable; IP literals only, never hostnames (README \"Probe hosts\")")
}

// Config returns the defaults, overridden by the --config file, overridden
// by the flags set on fs, validated.
func (f *Flags) Config(fs *pflag.FlagSet) (Config, error) {
	return f.over(Default(), fs)
}

func (f *Flags) over(base Config, fs *pflag.FlagSet) (Config, error) {
	cfg := base
	if f.configFile != "" {
		var err error
		if cfg, err = LoadFile(f.configFile, cfg); err != nil {
			return cfg, err
		}
	}
	fs.Visit(func(fl *pflag.Flag) {
		if set, ok := flagFields[fl.Name]; ok {
			set(&cfg, f.values)
		}
	})
	return cfg, cfg.Validate()
}

// ConfigFromText applies flags written one or more per line ("--tcp-mode=auto";
// blank lines and lines starting with '#' are skipped) over base. It reads
// the configuration a runtime hands a pre-installed NRI plugin.
func ConfigFromText(base Config, text string) (Config, error) {
	var args []string
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		args = append(args, strings.Fields(line)...)
	}
	fs := pflag.NewFlagSet("plugin configuration", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := &Flags{values: base}
	f.Bind(fs)
	if err := fs.Parse(args); err != nil {
		return base, fmt.Errorf("plugin configuration: %w", err)
	}
	if fs.NArg() > 0 {
		return base, fmt.Errorf("plugin configuration: unexpected argument %q", fs.Arg(0))
	}
	return f.over(base, fs)
}
