//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
)

// floorLine is hack/bench/wakefloor's result line.
var floorLine = regexp.MustCompile(`([0-9.]+) cpu-µs/wake-up`)

// wakeFloor builds and runs hack/bench/wakefloor: the CPU one timer
// wake-up of an otherwise idle process costs on this machine now, with no
// language runtime in the way — the least a short-circuited probe can
// cost per wake-up.
func wakeFloor(ctx context.Context, root, dir string) (float64, error) {
	bin := filepath.Join(dir, "wakefloor")
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if out, err := exec.CommandContext(ctx, cc, "-O2", "-o", bin, filepath.Join(root, "hack/bench/wakefloor/wakefloor.c")).CombinedOutput(); err != nil {
		return 0, fmt.Errorf("building the wake-up floor: %w: %s", err, out)
	}
	out, err := exec.CommandContext(ctx, bin, "250").Output()
	if err != nil {
		return 0, fmt.Errorf("the wake-up floor: %w", err)
	}
	m := floorLine.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("the wake-up floor printed no result: %s", out)
	}
	return strconv.ParseFloat(string(m[1]), 64)
}
