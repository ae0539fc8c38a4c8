package agent_test

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/probelet/probelet/cmd/probelet/agent"
)

// FuzzConfig feeds the config file loader and the plugin configuration
// text (what containerd hands a pre-installed plugin) anything: each either
// gives a valid configuration or an error naming the key or flag; nothing
// panics, and a rejected file never half-applies.
func FuzzConfig(f *testing.F) {
	for _, seed := range []string{
		"tcpMode: dial\nlogLevel: debug\n", "{\"reconcileInterval\": \"1m\"}", "tcpMode: [1, 2]",
		"unknownKey: 1", "pluginIndex: 5", "--tcp-mode=ebpf\n--listen unix:///x.sock", "#\n\n--state-dir=relative",
		"nodeName: ''", "\x00\xff", "reconcileInterval: -1s",
	} {
		f.Add(seed)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, text string) {
		file := filepath.Join(dir, "config.yaml")
		if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		base := agent.Default()
		cfg, err := agent.LoadFile(file, base)
		if err != nil && !reflect.DeepEqual(cfg, base) {
			t.Fatalf("a rejected file changed the configuration: %v", err)
		}
		if err == nil {
			_ = cfg.Validate()
		}
		if c, err := agent.ConfigFromText(base, text); err == nil {
			if verr := c.Validate(); verr != nil {
				t.Fatalf("ConfigFromText accepted an invalid configuration: %v", verr)
			}
		}
	})
}
