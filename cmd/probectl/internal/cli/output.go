package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"sigs.k8s.io/yaml"
)

// Output formats.
const (
	outputTable = ""
	outputWide  = "wide"
	outputJSON  = "json"
	outputYAML  = "yaml"
)

// validateOutput checks an -o value against the formats a command supports.
func validateOutput(got string, allowed ...string) error {
	if slices.Contains(allowed, got) {
		return nil
	}
	var names []string
	for _, a := range allowed {
		if a != outputTable {
			names = append(names, a)
		}
	}
	return usageErrorf("--output %q is not supported here; use one of: %s", got, strings.Join(names, ", "))
}

// printStructured writes v as indented JSON or as YAML, with nothing in
// either a terminal would act on (terminal.go).
func printStructured(w io.Writer, format string, v any) error {
	switch format {
	case outputJSON:
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", jsonControls(b))
		return err
	case outputYAML:
		tree, err := visibleTree(v)
		if err != nil {
			return err
		}
		b, err := yaml.Marshal(tree)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	return fmt.Errorf("unknown structured format %q", format)
}

// printLine writes v as one line of JSON (for streams: one object per line).
func printLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", jsonControls(b))
	return err
}

// table is a tab-aligned table.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)}
	if len(header) > 0 {
		t.row(header...)
	}
	return t
}

func (t *table) row(cells ...string) {
	_, _ = fmt.Fprintln(t.tw, strings.Join(cells, "\t"))
}

func (t *table) flush() error { return t.tw.Flush() }

// printRow writes one fixed-width row of a streamed table, without
// trailing blanks.
func printRow(w io.Writer, format string, cells ...any) error {
	line := strings.TrimRight(fmt.Sprintf(format, cells...), " \n")
	_, err := fmt.Fprintln(w, line)
	return err
}
