// Command launched is an NRI plugin that records how the NRI runtime
// launched it (arguments, environment, the configuration Configure hands
// over) into the file named by a "# report=PATH" line of that configuration.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"
)

// report is what the test reads back.
type report struct {
	Args   []string `json:"args"`
	Env    []string `json:"env"`
	Config string   `json:"config"`
	// IdxOptionErr is stub.WithPluginIdx's error when NRI already set
	// NRI_PLUGIN_IDX: a daemon must not pass its -idx flag then.
	IdxOptionErr string `json:"idxOptionErr"`
}

type plugin struct{ r report }

func (p *plugin) Configure(_ context.Context, config, _, _ string) (api.EventMask, error) {
	p.r.Config = config
	for line := range strings.Lines(config) {
		if path, ok := strings.CutPrefix(strings.TrimSpace(line), "# report="); ok {
			b, err := json.Marshal(p.r)
			if err != nil {
				return 0, err
			}
			return 0, os.WriteFile(path, b, 0o644)
		}
	}
	return 0, fmt.Errorf("no report path in the configuration")
}

// RunPodSandbox exists because a stub needs at least one event handler.
func (p *plugin) RunPodSandbox(context.Context, *api.PodSandbox) error { return nil }

func (p *plugin) Synchronize(context.Context, []*api.PodSandbox, []*api.Container) ([]*api.ContainerUpdate, error) {
	return nil, nil
}

func main() {
	p := &plugin{r: report{Args: os.Args, Env: os.Environ()}}
	if _, err := stub.New(p, stub.WithPluginIdx("10")); err != nil {
		p.r.IdxOptionErr = err.Error()
	}
	s, err := stub.New(p)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := s.Run(context.Background()); err != nil {
		os.Exit(1)
	}
}
