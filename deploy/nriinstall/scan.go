package nriinstall

import (
	"fmt"
	"io/fs"
	"os"

	"github.com/containerd/nri/pkg/api"
)

// scanPluginDir finds what NRI's plugin discovery chokes on: it treats every
// executable non-directory entry as a plugin and aborts discovery of all of
// them when one name is not <two digits>-<name>.
func scanPluginDir(dir string) ([]error, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var problems []error
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		info, err := e.Info()
		if err != nil || info.Mode()&fs.FileMode(0o111) == 0 {
			continue
		}
		if _, _, err := api.ParsePluginName(e.Name()); err != nil {
			problems = append(problems, fmt.Errorf("%s/%s blocks all pre-installed NRI plugins: %w", dir, e.Name(), err))
		}
	}
	return problems, nil
}
