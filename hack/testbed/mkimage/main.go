// Command mkimage packs a root filesystem directory into a single-layer OCI
// image archive that `ctr images import` accepts, named through the
// io.containerd.image.name annotation, so the test bed needs no registry.
// The output is deterministic: the same rootfs and flags give the same bytes.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

// listFlag collects a repeated string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, " ") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func run(args []string) error {
	var img Image
	var rootfs, out string
	fs := flag.NewFlagSet("mkimage", flag.ContinueOnError)
	fs.StringVar(&rootfs, "rootfs", "", "root filesystem directory to pack (required)")
	fs.StringVar(&out, "out", "", "output archive path (required)")
	fs.StringVar(&img.Name, "name", "", "image reference, e.g. localhost/probelet/pause:testbed (required)")
	fs.StringVar(&img.Arch, "arch", runtime.GOARCH, "image architecture")
	fs.Var((*listFlag)(&img.Entrypoint), "entrypoint", "entrypoint element (repeatable)")
	fs.Var((*listFlag)(&img.Cmd), "cmd", "cmd element (repeatable)")
	fs.Var((*listFlag)(&img.Env), "env", "KEY=VALUE environment entry (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if rootfs == "" || out == "" || img.Name == "" {
		return errors.New("-rootfs, -out and -name are required")
	}
	layer, err := TarDir(rootfs)
	if err != nil {
		return err
	}
	return WriteArchive(out, img, layer)
}
