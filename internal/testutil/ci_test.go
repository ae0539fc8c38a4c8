package testutil_test

import (
	"testing"

	"github.com/probelet/probelet/internal/testutil"
)

func TestCISet(t *testing.T) {
	for v, want := range map[string]bool{
		"": false, "false": false, "FALSE": false, "0": false, " false ": false,
		"true": true, "1": true, "yes": true, "TRUE": true,
	} {
		if got := testutil.CISet(v); got != want {
			t.Errorf("CISet(%q) = %v, want %v", v, got, want)
		}
	}
}
