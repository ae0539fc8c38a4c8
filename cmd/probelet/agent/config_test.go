package agent_test

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/probelet/probelet/cmd/probelet/agent"
)

func TestDefaultIsValid(t *testing.T) {
	if err := agent.Default().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestValidateNamesTheFlag(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*agent.Config)
		want   string
	}{
		{"relative NRI socket", func(c *agent.Config) { c.NRISocket = "nri.sock" }, "--nri-socket"},
		{"plugin index", func(c *agent.Config) { c.PluginIndex = "100" }, "--plugin-index"},
		{"tcp runtime endpoint", func(c *agent.Config) { c.RuntimeEndpoint = "tcp://1.2.3.4:5" }, "--runtime-endpoint"},
		{"listen relative", func(c *agent.Config) { c.Listen = "unix://run/p.sock" }, "--listen"},
		{"listen tcp", func(c *agent.Config) { c.Listen = "tcp://127.0.0.1:1" }, "--listen"},
		{"metrics address", func(c *agent.Config) { c.MetricsBindAddress = "9809" }, "--metrics-bind-address"},
		{"tcp mode", func(c *agent.Config) { c.TCPMode = "bpf" }, "--tcp-mode"},
		{"liveness action", func(c *agent.Config) { c.LivenessAction = "kill" }, "--liveness-action"},
		{"log format", func(c *agent.Config) { c.LogFormat = "xml" }, "--log-format"},
		{"log level", func(c *agent.Config) { c.LogLevel = "trace" }, "--log-level"},
		{"negative reconcile", func(c *agent.Config) { c.ReconcileInterval.Duration = -time.Second }, "--reconcile-interval"},
		{"kill guard", func(c *agent.Config) { c.KillGuard = "yes" }, `--kill-guard: "yes" is not one of on, off`},
		{"kill guard rate", func(c *agent.Config) { c.KillGuardRate = 0 }, "--kill-guard-rate: 0 must be positive"},
		{"kill guard burst", func(c *agent.Config) { c.KillGuardBurst = 0 }, "--kill-guard-burst: 0 must be at least 1"},
		{"kill guard secondary rate", func(c *agent.Config) { c.KillGuardSecondaryRate = -1 }, "--kill-guard-secondary-rate: -1 must not be negative"},
		{"kill guard thresholds", func(c *agent.Config) { c.KillGuardPartialThreshold = 0.8 }, "--kill-guard-partial-threshold: 0.8 must not exceed the unhealthy threshold 0.55"},
		{"kill guard unhealthy threshold", func(c *agent.Config) { c.KillGuardUnhealthyThreshold = 1.5 }, "--kill-guard-unhealthy-threshold: 1.5 must be in (0, 1]"},
		{"kill guard min failing", func(c *agent.Config) { c.KillGuardMinFailing = 0 }, "--kill-guard-min-failing: 0 must be at least 1"},
		{"kill guard ceiling", func(c *agent.Config) { c.KillGuardCeiling.Duration = 0 }, "--kill-guard-ceiling: 0s must be positive"},
		{"exec mode", func(c *agent.Config) { c.ExecMode = "nsenter" }, `--exec-mode: "nsenter" is not one of runtime, direct`},
		{"relative runtime state dir", func(c *agent.Config) { c.RuntimeStateDir = "run/containerd" }, "--runtime-state-dir"},
		{"relative exec helper", func(c *agent.Config) { c.ExecHelper = "probelet-exec" }, "--exec-helper"},
		{"lease namespace", func(c *agent.Config) { c.LeaseNamespace = "Probelet_System" }, `--lease-namespace: "Probelet_System" is not a namespace name`},
		{"lease renew interval", func(c *agent.Config) { c.LeaseRenewInterval.Duration = 500 * time.Millisecond }, "--lease-renew-interval: 500ms is not between 1s and 5m"},
		{"lease renew interval too long", func(c *agent.Config) { c.LeaseRenewInterval.Duration = time.Hour }, "--lease-renew-interval: 1h0m0s is not between 1s and 5m"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := agent.Default()
			tt.mutate(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Validate() = %v, want an error naming %s", err, tt.want)
			}
		})
	}
	c := agent.Default()
	c.MetricsBindAddress = ""
	if err := c.Validate(); err != nil {
		t.Errorf("empty metrics address (off) rejected: %v", err)
	}
}

func TestLoadFile(t *testing.T) {
	tests := []struct {
		file    string
		wantErr string
		check   func(agent.Config) bool
	}{
		{file: "config.yaml", check: func(c agent.Config) bool {
			return c.TCPMode == "dial" && c.LivenessAction == "report" && c.ReconcileInterval.Duration == time.Minute &&
				c.NRISocket == "/run/nri/nri.sock" && c.LogLevel == "info" // unset keys keep the defaults
		}},
		{file: "config.json", check: func(c agent.Config) bool {
			return c.MetricsBindAddress == "0.0.0.0:9809" && c.TCPVerify && c.LogFormat == "json" &&
				c.ExecMode == "direct" && c.RuntimeStateDir == "/run/k3s/containerd" && c.ExecHelper == ""
		}},
		{file: "kill-guard.yaml", check: func(c agent.Config) bool {
			return c.KillGuard == "on" && c.KillGuardSecondaryRate == 0 && c.KillGuardCeiling.Duration == 2*time.Minute &&
				c.KillGuardBurst == 5 // unset: the default
		}},
		{file: "unknown-key.yaml", wantErr: `unknown field "tcpmode"`},
		{file: "bad-duration.yaml", wantErr: "reconcileInterval"},
		{file: "duplicate-key.yaml", wantErr: `"tcpMode" already set`},
		{file: "missing.yaml", wantErr: "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			c, err := agent.LoadFile(filepath.Join("testdata", tt.file), agent.Default())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !tt.check(c) {
				t.Fatalf("LoadFile = %+v, %v", c, err)
			}
		})
	}
}

func TestConfigFromText(t *testing.T) {
	base := agent.Default()
	base.LogLevel = "debug"
	tests := []struct {
		name    string
		text    string
		wantErr string
		check   func(agent.Config) bool
	}{
		{name: "empty keeps the base", text: "", check: func(c agent.Config) bool { return reflect.DeepEqual(c, base) }},
		{name: "allow-probe-host is repeatable", text: "--allow-probe-host=10.0.0.0/8\n--allow-probe-host 192.168.1.7\n",
			check: func(c agent.Config) bool {
				cidrs, err := c.ProbeHostCIDRs()
				return err == nil && len(cidrs) == 2 && cidrs[0].String() == "10.0.0.0/8" && cidrs[1].String() == "192.168.1.7/32"
			}},
		{name: "allow-probe-host takes no hostname", text: "--allow-probe-host=localhost", wantErr: "--allow-probe-host"},
		{name: "deploy's preinstalled probelet.conf", text: "# probelet's configuration\n" +
			"--runtime-endpoint=unix:///run/containerd/containerd.sock\n--listen=unix:///run/probelet/probelet.sock\n" +
			"--metrics-bind-address=127.0.0.1:9809\n  --tcp-mode=dial   --tcp-verify\n\n",
			check: func(c agent.Config) bool {
				return c.TCPMode == "dial" && c.TCPVerify && c.MetricsBindAddress == "127.0.0.1:9809" && c.LogLevel == "debug"
			}},
		{name: "invalid value names the flag", text: "--liveness-action=kill", wantErr: "--liveness-action"},
		{name: "unknown flag", text: "--nope=1", wantErr: "unknown flag"},
		{name: "stray word", text: "--tcp-mode=dial verbose", wantErr: `unexpected argument "verbose"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := agent.ConfigFromText(base, tt.text)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !tt.check(c) {
				t.Fatalf("ConfigFromText = %+v, %v", c, err)
			}
		})
	}
}
