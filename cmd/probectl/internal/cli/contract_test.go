package cli_test

import (
	"encoding/json"
	"testing"

	"github.com/probelet/probelet/cri/server/servertest"
)

// The `ps -o json` fields DESIGN.md promises to outside tools. The golden
// file pins the whole output; this test pins the promise itself, so an
// -update cannot silently break it.
func TestPsJSONContract(t *testing.T) {
	_, endpoint, _, _ := servertest.StartFixture(t)
	r := probectl(t, endpoint, "ps", "-o", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.errOut)
	}
	var items []map[string]any
	if err := json.Unmarshal([]byte(r.out), &items); err != nil {
		t.Fatalf("not a JSON array: %v", err)
	}
	if len(items) != 4 {
		t.Fatalf("%d items, want 4", len(items))
	}
	for _, item := range items {
		for key, kind := range map[string]string{
			"containerId": "string", "podName": "string", "podNamespace": "string", "containerName": "string",
			"state": "string", "started": "bool", "ready": "bool", "probes": "object",
		} {
			assertKind(t, item, key, kind)
		}
	}
	app := items[1]
	probes := app["probes"].(map[string]any)
	for _, k := range []string{"liveness", "readiness", "startup"} {
		p, ok := probes[k].(map[string]any)
		if !ok {
			t.Fatalf("probes.%s missing", k)
		}
		for key, kind := range map[string]string{
			"result": "string", "consecutive": "number", "lastProbeTime": "string", "lastOutput": "string", "method": "string",
		} {
			assertKind(t, p, key, kind)
		}
	}
	ready := probes["readiness"].(map[string]any)
	want := map[string]any{"result": "Failure", "consecutive": 3.0, "lastProbeTime": "2026-05-01T11:59:57Z",
		"lastOutput": servertest.WebReadyError, "method": "http"}
	for k, v := range want {
		if ready[k] != v {
			t.Errorf("readiness.%s = %v, want %v", k, ready[k], v)
		}
	}
	if app["containerId"] != servertest.WebAppID || app["state"] != "CONTAINER_RUNNING" || app["ready"] != false || app["started"] != true {
		t.Errorf("app item %v", app)
	}
}

func assertKind(t *testing.T, m map[string]any, key, kind string) {
	t.Helper()
	v, ok := m[key]
	if !ok {
		t.Errorf("key %q missing in %v", key, m)
		return
	}
	var got string
	switch v.(type) {
	case string:
		got = "string"
	case bool:
		got = "bool"
	case float64:
		got = "number"
	case map[string]any:
		got = "object"
	default:
		got = "other"
	}
	if got != kind {
		t.Errorf("%q is %s (%v), want %s", key, got, v, kind)
	}
}
