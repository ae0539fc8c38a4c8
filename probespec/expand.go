package probespec

import (
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
)

// ExpandCommand expands $(VAR) references in an exec probe's command from
// the container spec's env, static values only, as the kubelet's
// ExpandContainerCommandOnlyStatic: every entry maps its name to its Value
// (the last entry for a name wins), so a valueFrom variable (a Secret, a
// ConfigMap, a field) expands to "" and its value is never read. The
// expansion is the kubelet's (third_party/forked/golang/expansion): "$$" is
// a literal "$", an unresolved $(VAR) and an unterminated "$(" are left as
// written. The input is not modified.
func ExpandCommand(cmd []string, env []corev1.EnvVar) []string {
	if len(cmd) == 0 {
		return nil
	}
	vars := make(map[string]string, len(env))
	for _, e := range env {
		vars[e.Name] = e.Value
	}
	out := make([]string, len(cmd))
	for i, arg := range cmd {
		out[i] = expand(arg, vars)
	}
	return out
}

// expand rewrites one argument.
func expand(s string, vars map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) {
			continue
		}
		b.WriteString(s[last:i])
		text, consumed := reference(s[i+1:], vars)
		b.WriteString(text)
		i += consumed
		last = i + 1
	}
	b.WriteString(s[last:])
	return b.String()
}

// reference reads what follows a "$" and returns the text to write and
// how many bytes after the "$" it used.
func reference(rest string, vars map[string]string) (string, int) {
	r, size := utf8.DecodeRuneInString(rest)
	switch r {
	case '$':
		return "$", size
	case '(':
		end := strings.IndexByte(rest[1:], ')')
		if end < 0 {
			// Unterminated: keep "$(" and read on after it.
			return "$(", 1
		}
		name := rest[1 : end+1]
		if v, ok := vars[name]; ok {
			return v, end + 2
		}
		return "$(" + name + ")", end + 2
	}
	// Not a reference. Like the kubelet, the rune is re-encoded, so an
	// invalid UTF-8 byte after "$" becomes U+FFFD.
	return "$" + string(r), size
}
