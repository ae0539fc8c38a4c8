//go:build e2e

package e2e_test

import (
	"encoding/json"
	"slices"
	"testing"
)

// designFields are the fields DESIGN.md promises in every item of
// `probectl ps -o json`, and in every probe of its probes map.
var (
	designFields      = []string{"containerId", "podName", "podNamespace", "containerName", "state", "started", "ready", "probes"}
	designProbeFields = []string{"result", "consecutive", "lastProbeTime", "lastOutput", "method"}
	designProbeKeys   = []string{"liveness", "readiness", "startup"}
	designResults     = []string{"Success", "Failure", "Unknown"}
)

// checkContract checks the real `probectl ps -o json` output against the
// DESIGN.md contract field by field, on the raw JSON (a missing field must
// not pass as its zero value).
func checkContract(t *testing.T, d *daemon) {
	t.Helper()
	var items []map[string]json.RawMessage
	decodeJSON(t, d.mustProbectl("ps", "-o", "json"), &items)
	if len(items) == 0 {
		t.Fatal("probectl ps -o json listed nothing")
	}
	for _, item := range items {
		requireKeys(t, "container", item, designFields)
		var probes map[string]map[string]json.RawMessage
		if err := json.Unmarshal(item["probes"], &probes); err != nil {
			t.Fatalf("probes: %v", err)
		}
		for key, p := range probes {
			if !slices.Contains(designProbeKeys, key) {
				t.Errorf("probes key %q is not one of %v", key, designProbeKeys)
			}
			requireKeys(t, "probe "+key, p, designProbeFields)
			var result string
			if err := json.Unmarshal(p["result"], &result); err != nil || !slices.Contains(designResults, result) {
				t.Errorf("probe %s result %s is not one of %v", key, p["result"], designResults)
			}
		}
	}
}

func requireKeys(t *testing.T, what string, m map[string]json.RawMessage, keys []string) {
	t.Helper()
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			t.Errorf("%s: field %q missing from probectl ps -o json", what, k)
		}
	}
}
