package disruption_test

import (
	"testing"

	"github.com/probelet/probelet/internal/disruption"
)

func TestStateSpelling(t *testing.T) {
	for _, tt := range []struct {
		s    disruption.State
		want string
	}{
		{disruption.Normal, "Normal"},
		{disruption.PartialDisruption, "PartialDisruption"},
		{disruption.FullDisruption, "FullDisruption"},
		{disruption.State(7), "State(7)"},
	} {
		if got := tt.s.String(); got != tt.want {
			t.Errorf("State(%d).String() = %q, want %q", int(tt.s), got, tt.want)
		}
	}
}
