package agent_test

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/probelet/probelet/cmd/probelet/agent"
)

func TestCRIProxyFlags(t *testing.T) {
	tests := []struct {
		args    []string
		wantErr string
	}{
		{args: nil},
		{args: []string{"--cri-proxy-listen=unix:///run/probelet/cri.sock"}},
		{args: []string{"--cri-proxy-listen=unix:///run/probelet/cri.sock", "--cri-proxy-verify"}},
		{args: []string{"--cri-proxy-listen=run/probelet/cri.sock"}, wantErr: "--cri-proxy-listen"},
		{args: []string{"--cri-proxy-listen=/run/containerd/containerd.sock"}, wantErr: "runtime's own endpoint"},
		{args: []string{"--cri-proxy-listen=unix:///run/containerd/containerd.sock"}, wantErr: "runtime's own endpoint"},
		{args: []string{"--cri-proxy-listen=unix:///run/probelet/probelet.sock"}, wantErr: "probelet's own socket"},
		{args: []string{"--cri-proxy-verify"}, wantErr: "needs --cri-proxy-listen"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			fs := pflag.NewFlagSet("probelet", pflag.ContinueOnError)
			f := agent.NewFlags()
			f.Bind(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			cfg, err := f.Config(fs)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(tt.args) > 0 && cfg.CRIProxyListen != "unix:///run/probelet/cri.sock" {
				t.Errorf("CRIProxyListen = %q", cfg.CRIProxyListen)
			}
			if cfg.CRIProxyVerify != (len(tt.args) == 2) {
				t.Errorf("CRIProxyVerify = %v", cfg.CRIProxyVerify)
			}
		})
	}
	if agent.Default().CRIProxyListen != "" {
		t.Error("the proxy is on by default")
	}
}
