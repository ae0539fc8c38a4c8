package results_test

import (
	"testing"

	"github.com/probelet/probelet/prober/results"
)

// The kubelet's results.Result.String (results_manager.go): Success,
// Failure and UNKNOWN. The JSON spelling (Name) stays Success, Failure,
// Unknown: probectl's and crictl inspect's contract.
func TestResultStringIsTheKubeletsAndNameTheJSONContract(t *testing.T) {
	tests := []struct {
		r          results.Result
		str, named string
	}{
		{results.Success, "Success", "Success"},
		{results.Failure, "Failure", "Failure"},
		{results.Unknown, "UNKNOWN", "Unknown"},
		{results.Result(7), "UNKNOWN", "Unknown"},
	}
	for _, tc := range tests {
		if got := tc.r.String(); got != tc.str {
			t.Errorf("Result(%d).String() = %q, want %q", int(tc.r), got, tc.str)
		}
		if got := tc.r.Name(); got != tc.named {
			t.Errorf("Result(%d).Name() = %q, want %q", int(tc.r), got, tc.named)
		}
	}
}
