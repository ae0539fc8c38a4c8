package termsafe_test

import (
	"testing"

	"github.com/probelet/probelet/internal/termsafe"
)

func TestString(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain text", "plain text"},
		{"tab\tand\nnewline", "tab\tand\nnewline"},
		{"\x1b[2Jcleared", `\x1b[2Jcleared`},
		{"\x1b]52;c;aGk=\x07clipboard", `\x1b]52;c;aGk=\x07clipboard`},
		{"del\x7f", `del\x7f`},
		{"c1 \u009b csi", `c1 \u009b csi`},
		{"not utf-8 \x9b", `not utf-8 \x9b`},
		{"ünïcødé ✓", "ünïcødé ✓"},
	} {
		if got := termsafe.String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
