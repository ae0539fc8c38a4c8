// Package termsafe makes text written by whoever runs a pod safe to show
// on a terminal: probe outputs, event messages and spec errors may carry
// control sequences a terminal acts on (OSC 52 sets the clipboard, CSI
// sequences move the cursor and clear the screen: the class of kubectl's
// CVE-2021-25743). probectl escapes all it prints with it, and the
// probe-state API the cells of the tables kubectl prints as they are.
package termsafe

import (
	"fmt"
	"unicode/utf8"
)

// Escape returns p with everything a terminal would act on made
// visible, in Go's escape notation so an operator still sees it was
// there: C0 controls other than newline and tab (both only move the
// cursor forward, and tables and descriptions use them) and DEL as \xNN,
// the C1 controls U+0080–U+009F as \u00NN, and a byte that is not UTF-8
// (an 8-bit terminal reads 0x80–0x9f as C1) as \xNN.
func Escape(p []byte) []byte {
	if !NeedsEscape(p) {
		return p
	}
	out := make([]byte, 0, len(p)+16)
	for i := 0; i < len(p); {
		r, size := utf8.DecodeRune(p[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			out = fmt.Appendf(out, `\x%02x`, p[i])
		case r == '\n' || r == '\t':
			out = append(out, p[i])
		case r < 0x20 || r == 0x7f:
			out = fmt.Appendf(out, `\x%02x`, r)
		case r >= 0x80 && r <= 0x9f:
			out = fmt.Appendf(out, `\u%04x`, r)
		default:
			out = append(out, p[i:i+size]...)
		}
		i += size
	}
	return out
}

// NeedsEscape reports whether Escape would change p.
func NeedsEscape(p []byte) bool {
	for i := 0; i < len(p); {
		if c := p[i]; c < utf8.RuneSelf {
			if (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f {
				return true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(p[i:])
		if (r == utf8.RuneError && size == 1) || r <= 0x9f {
			return true
		}
		i += size
	}
	return false
}

// String is Escape for a string.
func String(s string) string {
	if !NeedsEscape([]byte(s)) {
		return s
	}
	return string(Escape([]byte(s)))
}
