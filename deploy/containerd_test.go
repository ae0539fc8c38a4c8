package deploy_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	nri "github.com/containerd/nri/pkg/adaptation"
	"github.com/pelletier/go-toml/v2"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// nriConfig mirrors the TOML keys of containerd's NRI plugin configuration
// (internal/nri.Config in containerd v2.4; 1.7 has the same keys), so a
// misspelt key fails strict decoding instead of being ignored by containerd.
type nriConfig struct {
	Disable                   bool   `toml:"disable"`
	DisableConnections        bool   `toml:"disable_connections"`
	SocketPath                string `toml:"socket_path"`
	PluginPath                string `toml:"plugin_path"`
	PluginConfigPath          string `toml:"plugin_config_path"`
	PluginRegistrationTimeout string `toml:"plugin_registration_timeout"`
	PluginRequestTimeout      string `toml:"plugin_request_timeout"`
}

type containerdConfig struct {
	Version int `toml:"version"`
	Plugins struct {
		NRI nriConfig `toml:"io.containerd.nri.v1.nri"`
	} `toml:"plugins"`
}

var snippets = []struct {
	file    string
	version int // containerd config format
}{
	{"containerd/containerd-1.7-nri.toml", 2},
	{"containerd/containerd-2.x-nri.toml", 3},
}

func decodeSnippet(b []byte) (containerdConfig, error) {
	var c containerdConfig
	d := toml.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	return c, d.Decode(&c)
}

// TestContainerdSnippets: each snippet enables NRI with containerd's own
// defaults, the socket the DaemonSet mounts and the plugin directories the
// installer writes.
func TestContainerdSnippets(t *testing.T) {
	agentSocket := agentFlag(t, "--nri-socket")
	for _, s := range snippets {
		t.Run(filepath.Base(s.file), func(t *testing.T) {
			b, err := os.ReadFile(s.file)
			if err != nil {
				t.Fatal(err)
			}
			c, err := decodeSnippet(b)
			if err != nil {
				t.Fatalf("%s: %v", s.file, err)
			}
			if c.Version != s.version {
				t.Errorf("version = %d, want %d", c.Version, s.version)
			}
			if err := checkNRIConfig(c.Plugins.NRI, agentSocket); err != nil {
				t.Error(err)
			}
		})
	}
}

func checkNRIConfig(n nriConfig, agentSocket string) error {
	want := nriConfig{
		SocketPath:       agentSocket,
		PluginPath:       nri.DefaultPluginPath,
		PluginConfigPath: nri.DefaultPluginConfigPath,
	}
	got := n
	got.PluginRegistrationTimeout, got.PluginRequestTimeout = "", ""
	if got != want {
		return fmt.Errorf("NRI section %+v, want %+v", got, want)
	}
	if agentSocket != nri.DefaultSocketPath {
		return fmt.Errorf("DaemonSet socket %s is not NRI's default %s", agentSocket, nri.DefaultSocketPath)
	}
	for _, d := range []string{n.PluginRegistrationTimeout, n.PluginRequestTimeout} {
		if _, err := time.ParseDuration(d); err != nil {
			return err
		}
	}
	return nil
}

// agentFlag returns one flag of the base DaemonSet's agent.
func agentFlag(t *testing.T, name string) string {
	t.Helper()
	objs, err := load(filesys.MakeFsOnDisk(), "base")
	if err != nil {
		t.Fatal(err)
	}
	flags, err := parseFlags(objs.daemonSets[agentName].Spec.Template.Spec.Containers[0].Args)
	if err != nil {
		t.Fatal(err)
	}
	return flags[name]
}

// TestContainerdLoadsSnippets hands the snippets to a real containerd (the
// test bed's build) and reads back what it made of them: the 1.7 file as a
// version 2 main config (containerd 2.x migrates it), the 2.x file as a
// drop-in under imports. The request timeout is changed in the copy to
// prove the values come from the snippet, not from containerd's defaults.
func TestContainerdLoadsSnippets(t *testing.T) {
	bin := containerdBinary(t)
	for _, s := range snippets {
		t.Run(filepath.Base(s.file), func(t *testing.T) {
			b, err := os.ReadFile(s.file)
			if err != nil {
				t.Fatal(err)
			}
			b = bytes.Replace(b, []byte("plugin_request_timeout = "), []byte("plugin_request_timeout = '3s' #"), 1)
			dump := containerdDump(t, bin, s.version, b)
			c, err := decodeDumpedNRI(dump)
			if err != nil {
				t.Fatalf("%v\n%s", err, dump)
			}
			if c.PluginRequestTimeout != "3s" || c.Disable || c.SocketPath != nri.DefaultSocketPath {
				t.Errorf("containerd loaded %+v", c)
			}
		})
	}
}

// containerdBinary finds containerd in the test bed's cache
// (hack/testbed); the test is skipped where it has not been built.
func containerdBinary(t *testing.T) string {
	if p := os.Getenv("PROBELET_CONTAINERD"); p != "" {
		return p
	}
	cache := os.Getenv("PROBELET_TESTBED_CACHE")
	if cache == "" {
		cache = "/var/cache/probelet-testbed"
	}
	found, _ := filepath.Glob(filepath.Join(cache, "containerd@*", "bin", "containerd"))
	if len(found) == 0 {
		t.Skip("no containerd binary: build the test bed (hack/testbed) or set PROBELET_CONTAINERD")
	}
	return found[len(found)-1]
}

// containerdDump runs `containerd config dump` on the snippet, as the main
// config (version 2) or as a drop-in of a minimal version 3 config.
func containerdDump(t *testing.T, bin string, version int, snippet []byte) []byte {
	dir := t.TempDir()
	main := filepath.Join(dir, "config.toml")
	if version == 3 {
		write(t, filepath.Join(dir, "conf.d", "nri.toml"), snippet)
		snippet = fmt.Appendf(nil, "version = 3\nroot = %q\nstate = %q\nimports = [%q]\n",
			filepath.Join(dir, "root"), filepath.Join(dir, "state"), filepath.Join(dir, "conf.d", "*.toml"))
	}
	write(t, main, snippet)
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "--config", main, "config", "dump")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("containerd config dump: %v\n%s", err, stderr.Bytes())
	}
	return out
}

// decodeDumpedNRI reads the NRI section of a `containerd config dump`,
// ignoring the keys this repository does not set.
func decodeDumpedNRI(dump []byte) (nriConfig, error) {
	var c struct {
		Plugins map[string]map[string]any `toml:"plugins"`
	}
	if err := toml.Unmarshal(dump, &c); err != nil {
		return nriConfig{}, err
	}
	section, ok := c.Plugins["io.containerd.nri.v1.nri"]
	if !ok {
		return nriConfig{}, fmt.Errorf("no NRI section in the dump")
	}
	delete(section, "default_validator")
	b, err := toml.Marshal(map[string]any{"plugins": map[string]any{"io.containerd.nri.v1.nri": section}})
	if err != nil {
		return nriConfig{}, err
	}
	cfg, err := decodeSnippet(b)
	return cfg.Plugins.NRI, err
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
