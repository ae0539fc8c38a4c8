package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/probelet/probelet/cmd/probelet/agent"
	"github.com/probelet/probelet/cmd/probelet/criproxy"
)

func noProxy(context.Context, criproxy.Config, io.Writer) error { return errors.New("not the proxy") }

// executeProxy runs the command line with a CRI proxy that only records
// its config.
func executeProxy(t *testing.T, args ...string) (criproxy.Config, error) {
	t.Helper()
	var got criproxy.Config
	proxy := func(_ context.Context, cfg criproxy.Config, _ io.Writer) error { got = cfg; return nil }
	daemon := func(context.Context, agent.Config, io.Writer) error { return errors.New("not the daemon") }
	var out bytes.Buffer
	cmd := newRootCommandWith(daemon, nil, proxy, strings.NewReader(""), &out, &out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return got, err
}

// TestCRIProxySubcommandFlags: `probelet cri-proxy` hands its flags, over
// its defaults, to the proxy, and the daemon's flags are not its.
func TestCRIProxySubcommandFlags(t *testing.T) {
	withDefaults := func(mut func(*criproxy.Config)) criproxy.Config {
		c := criproxy.Default()
		mut(&c)
		return c
	}
	for _, tc := range []struct {
		name    string
		args    []string
		want    criproxy.Config
		wantErr string
	}{
		{"defaults", []string{"cri-proxy", "--listen=unix:///run/probelet/cri.sock"},
			withDefaults(func(c *criproxy.Config) { c.Listen = "unix:///run/probelet/cri.sock" }), ""},
		{"every flag", []string{"cri-proxy", "--listen=unix:///p.sock", "--runtime-endpoint=unix:///c.sock", "--verify",
			"--metrics-bind-address=127.0.0.1:1", "--exec-mode=direct", "--runtime-state-dir=/s", "--exec-helper=/h",
			"--exec-output-budget-mib=32", "--log-format=json", "--log-level=debug", "--io=std"},
			criproxy.Config{Listen: "unix:///p.sock", RuntimeEndpoint: "unix:///c.sock", Verify: true,
				MetricsBindAddress: "127.0.0.1:1", IO: "std", ExecMode: "direct", RuntimeStateDir: "/s", ExecHelper: "/h",
				ExecOutputBudgetMiB: 32, LogFormat: "json", LogLevel: "debug"}, ""},
		{"a daemon flag", []string{"cri-proxy", "--listen=unix:///p.sock", "--tcp-mode=dial"}, criproxy.Config{}, "unknown flag: --tcp-mode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := executeProxy(t, tc.args...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("config %+v, want %+v", got, tc.want)
			}
		})
	}
}

// execute runs the command line with a daemon that only records its config.
func execute(t *testing.T, args ...string) (agent.Config, string, error) {
	t.Helper()
	var got agent.Config
	daemon := func(_ context.Context, cfg agent.Config, _ io.Writer) error { got = cfg; return nil }
	validate := func(args []string, _ io.Reader, stdout, _ io.Writer) int {
		io.WriteString(stdout, "validate "+strings.Join(args, " "))
		if len(args) > 0 && args[0] == "broken.yaml" {
			return 1
		}
		return 0
	}
	var out bytes.Buffer
	cmd := newRootCommandWith(daemon, validate, noProxy, strings.NewReader(""), &out, &out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return got, out.String(), err
}

func TestFlagsOverrideConfigFileOverrideDefaults(t *testing.T) {
	file := filepath.Join(t.TempDir(), "probelet.yaml")
	if err := os.WriteFile(file, []byte("tcpMode: dial\nlogLevel: debug\nreconcileInterval: 1m\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	want := func(mut func(*agent.Config)) agent.Config {
		c := agent.Default()
		mut(&c)
		return c
	}
	tests := []struct {
		name string
		args []string
		want agent.Config
	}{
		{"defaults", nil, agent.Default()},
		{"flags", []string{"--tcp-mode=ebpf", "--tcp-verify", "--liveness-action", "report", "--plugin-index=05",
			"--nri-socket=/run/nri.sock", "--runtime-endpoint=unix:///c.sock", "--listen=unix:///p.sock",
			"--metrics-bind-address=:9", "--reconcile-interval=0", "--log-format=json", "--log-level=warn",
			"--kubeconfig=/etc/kubeconfig", "--node-name=node-7", "--state-dir=/srv/probelet",
			"--kill-guard=off", "--kill-guard-rate=2", "--kill-guard-burst=7", "--kill-guard-secondary-rate=0.5",
			"--kill-guard-partial-threshold=0.2", "--kill-guard-unhealthy-threshold=0.6", "--kill-guard-min-failing=4",
			"--kill-guard-ceiling=3m", "--exec-mode=direct", "--runtime-state-dir=/run/k3s/containerd",
			"--exec-helper=/opt/probelet/probelet-exec", "--lease-namespace=probelet-leases", "--lease-renew-interval=30s", "--io=std", "--probe-origin=pod"},
			agent.Config{NRISocket: "/run/nri.sock", PluginIndex: "05", RuntimeEndpoint: "unix:///c.sock", Listen: "unix:///p.sock",
				MetricsBindAddress: ":9", TCPMode: "ebpf", TCPVerify: true, LivenessAction: "report", LogFormat: "json", LogLevel: "warn",
				Kubeconfig: "/etc/kubeconfig", NodeName: "node-7", StateDir: "/srv/probelet",
				KillGuard: "off", KillGuardRate: 2, KillGuardBurst: 7, KillGuardSecondaryRate: 0.5, KillGuardPartialThreshold: 0.2,
				KillGuardUnhealthyThreshold: 0.6, KillGuardMinFailing: 4, KillGuardCeiling: agent.Duration{Duration: 3 * time.Minute},
				ExecMode: "direct", RuntimeStateDir: "/run/k3s/containerd", ExecHelper: "/opt/probelet/probelet-exec",
				LeaseNamespace: "probelet-leases", LeaseRenewInterval: agent.Duration{Duration: 30 * time.Second}, IO: "std", ProbeOrigin: "pod"}},
		{"config file", []string{"--config", file}, want(func(c *agent.Config) {
			c.TCPMode, c.LogLevel, c.ReconcileInterval = "dial", "debug", agent.Duration{Duration: time.Minute}
		})},
		{"flag beats config file", []string{"--config=" + file, "--tcp-mode=auto"}, want(func(c *agent.Config) {
			c.LogLevel, c.ReconcileInterval = "debug", agent.Duration{Duration: time.Minute}
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, out, err := execute(t, tt.args...)
			if err != nil {
				t.Fatalf("err = %v (%s)", err, out)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("config\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestBadCommandLines(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--tcp-mode=magic"}, "--tcp-mode"},
		{[]string{"--exec-mode=nsenter"}, "--exec-mode"},
		{[]string{"--reconcile-interval=soon"}, "reconcile-interval"},
		{[]string{"--no-such-flag"}, "unknown flag"},
		{[]string{"--config=/nonexistent/probelet.yaml"}, "no such file"},
		{[]string{"extra-arg"}, "unknown command"},
	}
	for _, tt := range tests {
		if _, out, err := execute(t, tt.args...); err == nil || !strings.Contains(err.Error()+out, tt.want) {
			t.Errorf("%v: err = %v, want one mentioning %q", tt.args, err, tt.want)
		}
	}
}

func TestVersionAndValidateDispatch(t *testing.T) {
	_, out, err := execute(t, "version")
	if err != nil || !strings.HasPrefix(out, "probelet ") {
		t.Errorf("version: %q, %v", out, err)
	}
	_, out, err = execute(t, "validate", "-o", "json", "pod.yaml")
	if err != nil || out != "validate -o json pod.yaml" {
		t.Errorf("validate: %q, %v; want the arguments passed through untouched", out, err)
	}
	_, _, err = execute(t, "validate", "broken.yaml")
	var code exitCode
	if !errors.As(err, &code) || code != 1 {
		t.Errorf("validate of a broken file: err = %v, want exit status 1", err)
	}
}
