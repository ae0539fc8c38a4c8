package convert

import (
	"fmt"
	"strings"
)

// diffContext is the number of unchanged lines around a change.
const diffContext = 3

// Diff returns a unified diff of a and b (labelled aName and bName), ""
// when they are the same.
func Diff(aName, bName string, a, b []byte) string {
	if string(a) == string(b) {
		return ""
	}
	al, bl := lines(string(a)), lines(string(b))
	ops, ok := align(al, bl, func(s string) string { return s }, false)
	if !ok {
		// Too large to align: one hunk replacing everything.
		ops = nil
		for i := range al {
			ops = append(ops, op{'-', i, -1})
		}
		for j := range bl {
			ops = append(ops, op{'+', -1, j})
		}
	}
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", aName, bName)
	for _, h := range hunks(ops) {
		writeHunk(&out, ops[h[0]:h[1]], al, bl)
	}
	return out.String()
}

// hunks groups the changes with their context: [start, end) ranges of ops.
func hunks(ops []op) [][2]int {
	var out [][2]int
	for i := 0; i < len(ops); i++ {
		if ops[i].kind == '=' {
			continue
		}
		start := max(0, i-diffContext)
		end := i
		// Extend while the next change is within twice the context.
		for j := i; j < len(ops); j++ {
			if ops[j].kind != '=' {
				end = j + 1
				continue
			}
			if j-end >= 2*diffContext {
				break
			}
		}
		end = min(len(ops), end+diffContext)
		if n := len(out); n > 0 && start <= out[n-1][1] {
			out[n-1][1] = end
		} else {
			out = append(out, [2]int{start, end})
		}
		i = end - 1
	}
	return out
}

func writeHunk(out *strings.Builder, ops []op, a, b []string) {
	aStart, bStart, aLen, bLen := -1, -1, 0, 0
	for _, o := range ops {
		if o.a >= 0 {
			if aStart < 0 {
				aStart = o.a
			}
			aLen++
		}
		if o.b >= 0 {
			if bStart < 0 {
				bStart = o.b
			}
			bLen++
		}
	}
	fmt.Fprintf(out, "@@ -%s +%s @@\n", hunkRange(aStart, aLen, ops, true), hunkRange(bStart, bLen, ops, false))
	for _, o := range ops {
		switch o.kind {
		case '=':
			out.WriteString(" " + a[o.a] + "\n")
		case '-':
			out.WriteString("-" + a[o.a] + "\n")
		case '+':
			out.WriteString("+" + b[o.b] + "\n")
		}
	}
}

// hunkRange renders "start,len" (1-based; an empty side names the line
// before it, as diff -u does).
func hunkRange(start, n int, ops []op, aSide bool) string {
	if n == 0 {
		// The line before the hunk on this side.
		before := 0
		for _, o := range ops {
			idx := o.b
			if aSide {
				idx = o.a
			}
			if idx >= 0 {
				before = idx
				break
			}
		}
		return fmt.Sprintf("%d,0", before)
	}
	if n == 1 {
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}
