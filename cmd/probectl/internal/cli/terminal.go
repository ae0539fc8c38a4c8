package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"unicode/utf8"

	"github.com/probelet/probelet/internal/termsafe"
)

// Probe outputs, event messages and spec errors are written by whoever
// runs the pod, and a terminal acts on control sequences in what it is
// shown: OSC 52 sets the operator's clipboard, CSI sequences move the
// cursor and clear the screen (the class of kubectl's CVE-2021-25743).
// Every byte probectl writes therefore goes through a termWriter, and
// structured output is made safe before it gets there while staying
// what it was (JSON stays valid JSON with the same values): termsafe.

// termWriter escapes control characters in everything written to w. It
// writes whole lines, so a UTF-8 sequence is never split between two
// writes; Flush writes what is left of the last line.
type termWriter struct {
	mu   sync.Mutex
	w    io.Writer
	line []byte
}

func newTermWriter(w io.Writer) *termWriter { return &termWriter{w: w} }

// Write implements io.Writer.
func (t *termWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.line = append(t.line, p...)
	i := bytes.LastIndexByte(t.line, '\n')
	if i < 0 {
		return len(p), nil
	}
	_, err := t.w.Write(termsafe.Escape(t.line[:i+1]))
	t.line = append(t.line[:0], t.line[i+1:]...)
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes the unfinished last line, if any.
func (t *termWriter) Flush() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.line) == 0 {
		return nil
	}
	_, err := t.w.Write(termsafe.Escape(t.line))
	t.line = t.line[:0]
	return err
}

// jsonControls rewrites the control characters encoding/json leaves raw
// in strings (DEL and U+0080–U+009F) as \u escapes: the same JSON value,
// and nothing for a terminal to act on. Outside strings JSON has none.
func jsonControls(b []byte) []byte {
	if !termsafe.NeedsEscape(b) {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return out
}

// visibleTree returns v as plain JSON data (maps, slices, strings,
// numbers) with every string's control characters made visible, for YAML:
// YAML cannot carry control characters at all (the encoder refuses them).
func visibleTree(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var tree any
	if err := json.Unmarshal(b, &tree); err != nil {
		return nil, err
	}
	return visibleStrings(tree), nil
}

func visibleStrings(v any) any {
	switch x := v.(type) {
	case string:
		return string(termsafe.Escape([]byte(x)))
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[string(termsafe.Escape([]byte(k)))] = visibleStrings(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = visibleStrings(e)
		}
		return out
	}
	return v
}
