package quietio_test

import (
	"testing"

	"github.com/probelet/probelet/quietio"
)

func TestSet(t *testing.T) {
	t.Cleanup(func() { _ = quietio.Set(quietio.Quiet) })
	for _, tc := range []struct {
		mode, want string
		err        bool
	}{
		{mode: "std", want: quietio.Std},
		{mode: "quiet", want: quietio.Quiet},
		{mode: "", want: quietio.Quiet},
		{mode: "fast", want: quietio.Quiet, err: true},
	} {
		err := quietio.Set(tc.mode)
		if (err != nil) != tc.err || quietio.Mode() != tc.want || quietio.Off() != (tc.want == quietio.Std) {
			t.Errorf("Set(%q) = %v: mode %s, off %v; want %s", tc.mode, err, quietio.Mode(), quietio.Off(), tc.want)
		}
	}
}
