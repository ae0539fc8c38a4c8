package killguard

import "testing"

func TestClassifyThresholds(t *testing.T) {
	cfg := Default()
	tests := []struct {
		probed, failing int
		want            State
	}{
		{0, 0, Normal},
		{20, 1, Normal},
		{20, 5, Normal},             // 0.25 < 0.30
		{20, 6, PartialDisruption},  // 0.30
		{20, 10, PartialDisruption}, // 0.50
		{20, 11, FullDisruption},    // 0.55
		{20, 20, FullDisruption},
		{2, 2, Normal},         // below the minimum count: not a storm
		{3, 3, FullDisruption}, // at it
		{100, 3, Normal},       // 0.03
	}
	for _, tc := range tests {
		if got := cfg.classify(Census{Probed: tc.probed, Failing: tc.failing}); got != tc.want {
			t.Errorf("classify(%d of %d failing) = %s, want %s", tc.failing, tc.probed, got, tc.want)
		}
	}
}
