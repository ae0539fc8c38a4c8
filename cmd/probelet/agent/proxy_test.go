package agent_test

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/probelet/probelet/cmd/probelet/agent"
)

// TestCRIProxyFlagsNameTheSubcommand: the daemon's old CRI proxy flags
// are refused with an error that says what runs the proxy now.
func TestCRIProxyFlagsNameTheSubcommand(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{args: nil},
		{args: []string{"--cri-proxy-listen=unix:///run/probelet/cri.sock"},
			want: []string{"--cri-proxy-listen", "probelet cri-proxy --listen unix:///run/probelet/cri.sock", "probelet-cri-proxy.service"}},
		{args: []string{"--cri-proxy-verify"}, want: []string{"--cri-proxy-verify", "probelet cri-proxy --verify"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			fs := pflag.NewFlagSet("probelet", pflag.ContinueOnError)
			f := agent.NewFlags()
			f.Bind(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			_, err := f.Config(fs)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatalf("%v accepted", tt.args)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}
