package server_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/probelet/probelet/cri/server/servertest"
	"github.com/probelet/probelet/internal/testutil"
	"github.com/probelet/probelet/node"
)

// crictlBinary finds the crictl the test bed builds (hack/testbed), or the
// one named by PROBELET_CRICTL. Without it the test is skipped, except in
// CI, where it must run.
func crictlBinary(t *testing.T) string {
	t.Helper()
	path := os.Getenv("PROBELET_CRICTL")
	if path == "" {
		cache := os.Getenv("PROBELET_TESTBED_CACHE")
		if cache == "" {
			cache = "/var/cache/probelet-testbed"
		}
		path = filepath.Join(cache, "crictl@v1.34.0", "bin", "crictl")
	}
	if _, err := os.Stat(path); err != nil {
		testutil.Unavailable(t, "crictl not found at %s (build it with hack/testbed/build.sh): %v", path, err)
	}
	return path
}

type crictl struct {
	bin, endpoint, config string
}

func (c crictl) cmd(ctx context.Context, args ...string) *exec.Cmd {
	all := append([]string{"--config", c.config, "--runtime-endpoint", c.endpoint, "--timeout", "5s"}, args...)
	return exec.CommandContext(ctx, c.bin, all...)
}

func (c crictl) run(t *testing.T, args ...string) string {
	t.Helper()
	out, err := c.cmd(context.Background(), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("crictl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// The real crictl against the in-process server with the fixture.
func TestCrictl(t *testing.T) {
	bin := crictlBinary(t)
	_, endpoint, _, view := servertest.StartFixture(t)
	config := filepath.Join(t.TempDir(), "crictl.yaml")
	if err := os.WriteFile(config, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	c := crictl{bin: bin, endpoint: endpoint, config: config}

	t.Run("version", func(t *testing.T) {
		out := c.run(t, "version")
		for _, want := range []string{"RuntimeName:  probelet", "RuntimeVersion:  v0.0.0-test", "RuntimeApiVersion:  v1"} {
			assertContains(t, out, want)
		}
	})
	t.Run("pods", func(t *testing.T) {
		out := c.run(t, "pods")
		for _, want := range []string{"web", "default", "dns", "kube-system", "job", "batch", "NotReady", "Ready"} {
			assertContains(t, out, want)
		}
	})
	t.Run("ps", func(t *testing.T) {
		out := c.run(t, "ps")
		t.Log("\n" + out)
		for _, want := range []string{"a100000000000", "app", "sidecar", "coredns", "Running", "web", "kube-system"} {
			assertContains(t, out, want)
		}
		if strings.Contains(out, "worker") {
			t.Errorf("crictl ps lists the exited worker:\n%s", out)
		}
		assertContains(t, c.run(t, "ps", "-a"), "Exited")
		assertContains(t, c.run(t, "ps", "--name", "core", "-q"), "b100000000000")
	})
	t.Run("inspect", func(t *testing.T) {
		// crictl lifts each verbose info key to the top level.
		var doc struct {
			Status struct{ State string } `json:"status"`
			Info   struct {
				SandboxID string `json:"sandboxID"`
			} `json:"info"`
			Probelet struct {
				Ready  bool `json:"ready"`
				Probes map[string]struct {
					Result, LastOutput, Method string
				} `json:"probes"`
			} `json:"probelet"`
		}
		decode(t, c.run(t, "inspect", "a1"), &doc)
		r := doc.Probelet.Probes["readiness"]
		if doc.Status.State != "CONTAINER_RUNNING" || doc.Info.SandboxID != servertest.WebSandboxID ||
			doc.Probelet.Ready || r.Result != "Failure" ||
			r.LastOutput != servertest.WebReadyError || r.Method != "http" {
			t.Errorf("crictl inspect: %+v", doc)
		}
	})
	t.Run("inspectp", func(t *testing.T) {
		var doc struct {
			Status struct {
				Network struct{ IP string } `json:"network"`
			} `json:"status"`
			Probelet struct {
				Containers []struct{ Name string } `json:"containers"`
			} `json:"probelet"`
		}
		decode(t, c.run(t, "inspectp", "5a"), &doc)
		if doc.Status.Network.IP != "10.88.0.5" || len(doc.Probelet.Containers) != 2 {
			t.Errorf("crictl inspectp: %+v", doc)
		}
	})
	t.Run("info", func(t *testing.T) {
		out := c.run(t, "info")
		for _, want := range []string{`"type": "NRIConnected"`, `"probedContainers": 3`} {
			assertContains(t, strings.Join(strings.Fields(out), " "), strings.Join(strings.Fields(want), " "))
		}
	})
	t.Run("read-only", func(t *testing.T) {
		out, err := c.cmd(context.Background(), "stop", "a1").CombinedOutput()
		if err == nil || !strings.Contains(string(out), "probelet is read-only: StopContainer is not supported") {
			t.Errorf("crictl stop: %v\n%s", err, out)
		}
	})
	t.Run("events", func(t *testing.T) { crictlEvents(t, c, view) })
}

// crictlEvents runs `crictl events`, publishes a lifecycle event and reads
// it back; the process is ours and is killed by its context.
func crictlEvents(t *testing.T, c crictl, view *servertest.View) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := c.cmd(ctx, "events", "-o", "json")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	servertest.WaitFor(t, "crictl's event subscription", func() bool { n, _, _ := view.EventStats(); return n == 1 })
	pod := servertest.Pods()[1]
	view.Publish(node.Event{Type: node.ContainerStoppedEvent, Time: servertest.Now, PodUID: pod.UID,
		SandboxID: pod.SandboxID, ContainerID: servertest.DNSCoreID, Pod: pod})
	var ev struct {
		ContainerID        string `json:"containerId"`
		ContainerEventType string `json:"containerEventType"`
		PodSandboxStatus   struct {
			Metadata struct{ Name string } `json:"metadata"`
		} `json:"podSandboxStatus"`
	}
	if err := json.NewDecoder(stdout).Decode(&ev); err != nil {
		t.Fatalf("crictl events printed no JSON event: %v", err)
	}
	if ev.ContainerID != servertest.DNSCoreID || ev.ContainerEventType != "CONTAINER_STOPPED_EVENT" || ev.PodSandboxStatus.Metadata.Name != "dns" {
		t.Errorf("crictl events: %+v", ev)
	}
}

func assertContains(t *testing.T, out, want string) {
	t.Helper()
	if !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
}

func decode(t *testing.T, out string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("crictl output is not JSON: %v\n%s", err, out)
	}
}
