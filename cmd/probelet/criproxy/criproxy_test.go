package criproxy_test

import (
	"strings"
	"testing"

	"github.com/probelet/probelet/cmd/probelet/criproxy"
)

func TestValidateNamesTheFlag(t *testing.T) {
	ok := criproxy.Default()
	ok.Listen = "unix:///run/probelet/cri.sock"
	for _, tc := range []struct {
		name string
		mut  func(*criproxy.Config)
		want string
	}{
		{"valid", func(*criproxy.Config) {}, ""},
		{"no listen", func(c *criproxy.Config) { c.Listen = "" }, "--listen"},
		{"relative listen", func(c *criproxy.Config) { c.Listen = "run/cri.sock" }, "--listen"},
		{"tcp runtime", func(c *criproxy.Config) { c.RuntimeEndpoint = "tcp://127.0.0.1:1" }, "--runtime-endpoint"},
		{"listen on the runtime", func(c *criproxy.Config) { c.Listen = c.RuntimeEndpoint }, "runtime's own endpoint"},
		{"metrics not host:port", func(c *criproxy.Config) { c.MetricsBindAddress = "9810" }, "--metrics-bind-address"},
		{"metrics off", func(c *criproxy.Config) { c.MetricsBindAddress = "" }, ""},
		{"direct exec", func(c *criproxy.Config) { c.ExecMode = "direct" }, ""},
		{"unknown exec mode", func(c *criproxy.Config) { c.ExecMode = "fast" }, "--exec-mode"},
		{"no exec output budget", func(c *criproxy.Config) { c.ExecOutputBudgetMiB = 0 }, "--exec-output-budget-mib"},
		{"relative state dir", func(c *criproxy.Config) { c.RuntimeStateDir = "run/containerd" }, "--runtime-state-dir"},
		{"relative helper", func(c *criproxy.Config) { c.ExecHelper = "probelet-exec" }, "--exec-helper"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.mut(&c)
			err := c.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to name %q", err, tc.want)
			}
		})
	}
}
