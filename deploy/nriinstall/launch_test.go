package nriinstall_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	nri "github.com/containerd/nri/pkg/adaptation"
)

// launchReport is what testdata/launched writes when NRI configures it.
type launchReport struct {
	Args         []string `json:"args"`
	Env          []string `json:"env"`
	Config       string   `json:"config"`
	IdxOptionErr string   `json:"idxOptionErr"`
}

// TestNRILaunchesInstalledPlugin installs a recording plugin the way the
// installer DaemonSet does and starts NRI's runtime side (the code inside
// containerd) on those directories: NRI must find, launch and configure it.
// The report pins down what a pre-installed probelet gets from containerd.
func TestNRILaunchesInstalledPlugin(t *testing.T) {
	l := newLayout(t, "")
	buildPlugin(t, l.binary)
	reportPath := filepath.Join(l.root, "report.json")
	config := fmt.Sprintf("# report=%s\n--tcp-mode=auto\n", reportPath)
	if _, err := mustNew(t, l).Install(l.binary, []byte(config)); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	r := startRuntime(t, l)
	defer r.Stop()
	t.Logf("NRI launched, registered and configured the plugin in %v", time.Since(start))

	rep := readReport(t, reportPath)
	if rep.Config != config {
		t.Errorf("Configure delivered %q, want the installed %q", rep.Config, config)
	}
	if len(rep.Args) != 1 || rep.Args[0] != filepath.Join(l.plugins, "10-probelet") {
		t.Errorf("args %q: NRI launches the plugin by path, without arguments", rep.Args)
	}
	wantEnv := []string{"NRI_PLUGIN_IDX=10", "NRI_PLUGIN_NAME=probelet", "NRI_PLUGIN_SOCKET=3"}
	if env := slices.Sorted(slices.Values(rep.Env)); !slices.Equal(env, wantEnv) {
		t.Errorf("environment %q, want exactly %q", env, wantEnv)
	}
	if !strings.Contains(rep.IdxOptionErr, "plugin ID already set") {
		t.Errorf("stub.WithPluginIdx under NRI_PLUGIN_IDX: error %q, want it refused", rep.IdxOptionErr)
	}
}

// buildPlugin compiles testdata/launched to out.
func buildPlugin(t *testing.T, out string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-o", out, "./testdata/launched")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build test plugin: %v\n%s", err, b)
	}
}

// startRuntime runs NRI's runtime side with external connections off, so
// only pre-installed plugins can take part. Start returns once every
// launched plugin has registered, been configured and synchronized.
func startRuntime(t *testing.T, l layout) *nri.Adaptation {
	t.Helper()
	sync := func(ctx context.Context, cb nri.SyncCB) error {
		_, err := cb(ctx, nil, nil)
		return err
	}
	update := func(context.Context, []*nri.ContainerUpdate) ([]*nri.ContainerUpdate, error) { return nil, nil }
	r, err := nri.New("containerd", "test", sync, update,
		nri.WithPluginPath(l.plugins),
		nri.WithPluginConfigPath(l.conf),
		nri.WithDisabledExternalConnections(),
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	return r
}

func readReport(t *testing.T, path string) launchReport {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the plugin was not launched and configured: %v", err)
	}
	var rep launchReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}
