package main

import (
	"encoding/json"
	"maps"
	"os"
	"slices"
	"testing"

	"github.com/spf13/pflag"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// TestChartNamesEveryFlag: the Helm chart's controller.flags, in
// values.yaml and in its schema, are exactly this binary's flags.
func TestChartNamesEveryFlag(t *testing.T) {
	var want []string
	flagSet(&options{}).VisitAll(func(f *pflag.Flag) { want = append(want, f.Name) })
	slices.Sort(want)

	const chart = "../../deploy/helm/probelet/"
	node, err := yaml.ReadFile(chart + "values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	flags, err := node.Pipe(yaml.Lookup("controller", "flags"))
	if err != nil || flags == nil {
		t.Fatalf("values.yaml has no controller.flags: %v", err)
	}
	values, err := flags.Fields()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(values)
	if !slices.Equal(values, want) {
		t.Errorf("values.yaml controller.flags: %q\nthe controller's flags: %q", values, want)
	}

	data, err := os.ReadFile(chart + "values.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Properties struct {
			Controller struct {
				Properties struct {
					Flags struct{ Properties map[string]any }
				}
			}
		}
	}
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	if schema := slices.Sorted(maps.Keys(s.Properties.Controller.Properties.Flags.Properties)); !slices.Equal(schema, want) {
		t.Errorf("values.schema.json controller.flags: %q\nthe controller's flags: %q", schema, want)
	}
}
