package harness

import "testing"

func TestDecide(t *testing.T) {
	tests := []struct {
		name string
		root bool
		env  map[string]string
		want verdict
	}{
		{"root runs", true, nil, verdictRun},
		{"root in CI runs", true, map[string]string{"CI": "true"}, verdictRun},
		{"no root on a laptop skips", false, nil, verdictSkip},
		{"no root in CI fails", false, map[string]string{"CI": "true"}, verdictFail},
		{"CI=1 fails", false, map[string]string{"CI": "1"}, verdictFail},
		{"CI=false skips", false, map[string]string{"CI": "false"}, verdictSkip},
		{"CI=0 skips", false, map[string]string{"CI": "0"}, verdictSkip},
		{"PROBELET_E2E=1 fails", false, map[string]string{"PROBELET_E2E": "1"}, verdictFail},
		{"PROBELET_E2E=0 skips", false, map[string]string{"PROBELET_E2E": "0"}, verdictSkip},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			getenv := func(k string) string { return tc.env[k] }
			if got := decide(tc.root, getenv); got != tc.want {
				t.Errorf("decide(root=%v, %v) = %v, want %v", tc.root, tc.env, got, tc.want)
			}
		})
	}
}
