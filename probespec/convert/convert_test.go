package convert_test

import (
	"strings"
	"testing"

	"github.com/probelet/probelet/probespec/convert"
)

func TestConvert_Rules(t *testing.T) {
	tests := []struct {
		name, in, want string
		gate           bool
	}{
		{
			name: "liveness only: no readiness gate",
			in:   "kind: Pod\nmetadata: {name: a}\nspec:\n  containers:\n  - name: a\n    livenessProbe: {tcpSocket: {port: 80}}\n",
			want: "kind: Pod\nmetadata: {name: a, annotations: {probelet.io/probes: '{\"a\":{\"livenessProbe\":{\"tcpSocket\":{\"port\":80}}}}'}}\nspec:\n  containers:\n  - name: a\n",
		},
		{
			name: "readiness: gate appended in the list's own style",
			in:   "kind: Pod\nmetadata:\n  name: a\nspec:\n  readinessGates: [{conditionType: x}]\n  containers:\n  - name: a\n    readinessProbe: {tcpSocket: {port: 80}}\n",
			want: "kind: Pod\nmetadata:\n  name: a\n  annotations:\n    probelet.io/probes: '{\"a\":{\"readinessProbe\":{\"tcpSocket\":{\"port\":80}}}}'\nspec:\n  readinessGates: [{conditionType: x}, {conditionType: probelet.io/ready}]\n  containers:\n  - name: a\n",
			gate: true,
		},
		{
			name: "gate already there",
			in:   "kind: Pod\nmetadata:\n  name: a\nspec:\n  readinessGates:\n  - conditionType: probelet.io/ready\n  containers:\n  - name: a\n    readinessProbe: {tcpSocket: {port: 80}}\n",
			want: "kind: Pod\nmetadata:\n  name: a\n  annotations:\n    probelet.io/probes: '{\"a\":{\"readinessProbe\":{\"tcpSocket\":{\"port\":80}}}}'\nspec:\n  readinessGates:\n  - conditionType: probelet.io/ready\n  containers:\n  - name: a\n",
		},
		{
			name: "blank lines, comment spacing and 4-space indentation kept",
			in:   "kind: Pod\n\nmetadata:\n    name: a    # x\n\nspec:\n    containers:\n      - name: a\n\n        livenessProbe:\n            tcpSocket: {port: 80}\n        image: b\n",
			want: "kind: Pod\n\nmetadata:\n    name: a    # x\n    annotations:\n        probelet.io/probes: '{\"a\":{\"livenessProbe\":{\"tcpSocket\":{\"port\":80}}}}'\n\nspec:\n    containers:\n      - name: a\n\n        image: b\n",
		},
		{
			name: "JSON with tabs keeps its indentation",
			in:   "{\n\t\"kind\": \"Pod\",\n\t\"metadata\": {\"name\": \"a\"},\n\t\"spec\": {\"containers\": [{\"name\": \"a\", \"livenessProbe\": {\"tcpSocket\": {\"port\": 80}}}]}\n}\n",
			want: "{\n\t\"kind\": \"Pod\",\n\t\"metadata\": {\n\t\t\"name\": \"a\",\n\t\t\"annotations\": {\n\t\t\t\"probelet.io/probes\": \"{\\\"a\\\":{\\\"livenessProbe\\\":{\\\"tcpSocket\\\":{\\\"port\\\":80}}}}\"\n\t\t}\n\t},\n\t\"spec\": {\n\t\t\"containers\": [\n\t\t\t{\n\t\t\t\t\"name\": \"a\"\n\t\t\t}\n\t\t]\n\t}\n}\n",
		},
		{
			name: "other kinds and pods without probes are left byte for byte",
			in:   "kind:   Service   # odd spacing\nmetadata: {name: a}\n---\nkind: Pod\nmetadata: {name: b}\nspec: {containers: [{name: b}]}\n",
			want: "kind:   Service   # odd spacing\nmetadata: {name: a}\n---\nkind: Pod\nmetadata: {name: b}\nspec: {containers: [{name: b}]}\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, errs := convert.Convert([]byte(tc.in))
			if errs != nil {
				t.Fatal(errs)
			}
			if string(res.Output) != tc.want {
				t.Errorf("output:\n%s\nwant:\n%s", res.Output, tc.want)
			}
			gate := len(res.Changes) > 0 && res.Changes[0].GateAdded
			if gate != tc.gate {
				t.Errorf("gate added %v, want %v", gate, tc.gate)
			}
			again, errs := convert.Convert(res.Output)
			if errs != nil || again.Changed() || string(again.Output) != string(res.Output) {
				t.Errorf("not idempotent: %v %+v", errs, again.Changes)
			}
		})
	}
}

func TestConvert_Errors(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"no container name", "kind: Pod\nmetadata: {name: a}\nspec:\n  containers:\n  - livenessProbe: {tcpSocket: {port: 80}}\n",
			"document 1 (Pod a), line 5: spec.containers[0].name: Required value"},
		{"wrong type", "kind: Pod\nmetadata: {name: a, namespace: n}\nspec:\n  containers:\n  - name: a\n    livenessProbe: {periodSeconds: ten, tcpSocket: {port: 80}}\n",
			"document 1 (Pod n/a), line 6: spec.containers[0].livenessProbe.periodSeconds: Invalid value: must be int32, not string"},
		{"not an object", "- a\n- b\n", "document 1, line 1: not a Kubernetes object"},
		{"second document", "kind: Service\n---\nkind: Job\nmetadata: {name: j}\nspec: {template: 3}\n",
			"document 2 (Job j), line 5: spec.template: must be a pod template"},
		{"list item", `{"kind": "List", "items": [{"kind": "Pod", "metadata": {"name": "p"}, "spec": {"initContainers": [{"name": "i", "startupProbe": {"exec": {"command": ["x"]}}}]}}]}`,
			"document 1 (Pod p), line 1: items[0].spec.initContainers[0].startupProbe: Forbidden"},
		{"probe host outside the pod", "kind: Pod\nmetadata: {name: a, namespace: n}\nspec:\n  containers:\n  - name: a\n    livenessProbe: {tcpSocket: {host: 127.0.0.1, port: 80}}\n",
			"document 1 (Pod n/a), line 5: spec.containers[0].livenessProbe.tcpSocket.host: Invalid value: \"127.0.0.1\": must be empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, errs := convert.Convert([]byte(tc.in))
			if len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), tc.want) {
				t.Fatalf("errors %v, want one starting with %q", errs, tc.want)
			}
			if res.Output != nil {
				t.Errorf("output %q despite the error", res.Output)
			}
		})
	}
}

func TestDiff(t *testing.T) {
	a := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n"
	b := "1\n2\n3\nfour\n5\n6\n7\n8\n9\n10\n11\n12\n13\n"
	want := "--- a\n+++ b\n@@ -1,7 +1,7 @@\n 1\n 2\n 3\n-4\n+four\n 5\n 6\n 7\n@@ -10,3 +10,4 @@\n 10\n 11\n 12\n+13\n"
	if got := convert.Diff("a", "b", []byte(a), []byte(b)); got != want {
		t.Errorf("diff:\n%s\nwant:\n%s", got, want)
	}
	if got := convert.Diff("a", "b", []byte(a), []byte(a)); got != "" {
		t.Errorf("diff of equal inputs: %q", got)
	}
}
