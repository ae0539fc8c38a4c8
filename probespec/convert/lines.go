package convert

import "strings"

// op is one step of a line alignment: a line in both (equal), only in a
// (del) or only in b (ins).
type op struct {
	kind byte // '=', '-', '+'
	a, b int  // line indexes; -1 when the side has none
}

// maxCells bounds the alignment table (lines of a × lines of b).
const maxCells = 16 << 20

// align returns the longest-common-subsequence alignment of a and b by
// key(line); between a deletion and an insertion at the same place the
// insertion comes first when insertFirst is set. ok is false when the
// inputs are too large to align.
func align(a, b []string, key func(string) string, insertFirst bool) (ops []op, ok bool) {
	n, m := len(a), len(b)
	if (n+1)*(m+1) > maxCells {
		return nil, false
	}
	ka, kb := make([]string, n), make([]string, m)
	for i := range a {
		ka[i] = key(a[i])
	}
	for j := range b {
		kb[j] = key(b[j])
	}
	// lcs[i][j] is the LCS length of a[i:] and b[j:].
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if ka[i] == kb[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && ka[i] == kb[j]:
			ops = append(ops, op{'=', i, j})
			i, j = i+1, j+1
		case j < m && (i == n || lcs[i][j+1] > lcs[i+1][j] || insertFirst && lcs[i][j+1] == lcs[i+1][j]):
			ops = append(ops, op{'+', -1, j})
			j++
		default:
			ops = append(ops, op{'-', i, -1})
			i++
		}
	}
	return ops, true
}

// lines splits text into lines without their newlines.
func lines(text string) []string {
	if text == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(text, "\n"), "\n")
}

// indent is the number of leading spaces.
func indent(line string) int { return len(line) - len(strings.TrimLeft(line, " ")) }

// indentUnit is the document's indentation step: the smallest positive
// indentation of a line that is not a list item (2 when there is none).
func indentUnit(ls []string) int {
	unit := 0
	for _, l := range ls {
		t := strings.TrimLeft(l, " ")
		if n := indent(l); n > 0 && t != "" && !strings.HasPrefix(t, "- ") && !strings.HasPrefix(t, "#") && (unit == 0 || n < unit) {
			unit = n
		}
	}
	if unit == 0 {
		return 2
	}
	return unit
}

// normalized compares lines whatever their indentation and spacing.
func normalized(line string) string { return strings.Join(strings.Fields(line), " ") }
