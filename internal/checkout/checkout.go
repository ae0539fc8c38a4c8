// Package checkout finds the probelet checkout a tool runs in: the
// benchmarks under hack/bench build binaries from it and run its hack/
// scripts.
package checkout

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
)

// Root is the nearest directory at or above the working directory holding
// probelet's go.mod.
func Root() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return rootAbove(wd)
}

func rootAbove(wd string) (string, error) {
	for dir := wd; ; dir = filepath.Dir(dir) {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(data, []byte("module github.com/probelet/probelet\n")) {
			return dir, nil
		}
		if dir == filepath.Dir(dir) {
			return "", fmt.Errorf("run it inside the probelet checkout (no probelet go.mod above %s)", wd)
		}
	}
}
