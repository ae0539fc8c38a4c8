// Command mkimage packs a root filesystem directory into a single-layer OCI
// image archive that `ctr images import` accepts, named through the
// io.containerd.image.name annotation, so the test bed needs no registry.
// With -platform (repeated) it packs one root filesystem per architecture
// into a multi-platform image (an image index), as hack/image does for
// probelet's own image. The output is deterministic: the same root
// filesystems and flags give the same bytes.
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

// options are the command line.
type options struct {
	img        Image
	rootfs     string
	platforms  listFlag // ARCH=DIR
	gzip       bool
	out        string
	digestFile string
}

func run(args []string) error {
	var o options
	fs := flag.NewFlagSet("mkimage", flag.ContinueOnError)
	fs.StringVar(&o.rootfs, "rootfs", "", "root filesystem directory to pack (required without -platform)")
	fs.Var(&o.platforms, "platform", "ARCH=DIR: a multi-platform image with DIR as linux/ARCH's root filesystem (repeatable; replaces -rootfs and -arch)")
	fs.BoolVar(&o.gzip, "gzip", false, "gzip the layers of a multi-platform image")
	fs.StringVar(&o.out, "out", "", "output archive path (required)")
	fs.StringVar(&o.digestFile, "digest-file", "", "also write the image's digest (the manifest's, or the index's with -platform) to this file")
	fs.StringVar(&o.img.Name, "name", "", "image reference, e.g. localhost/probelet/pause:testbed (required)")
	fs.StringVar(&o.img.Arch, "arch", runtime.GOARCH, "image architecture")
	fs.Var((*listFlag)(&o.img.Entrypoint), "entrypoint", "entrypoint element (repeatable)")
	fs.Var((*listFlag)(&o.img.Cmd), "cmd", "cmd element (repeatable)")
	fs.Var((*listFlag)(&o.img.Env), "env", "KEY=VALUE environment entry (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if (o.rootfs == "") == (len(o.platforms) == 0) || o.out == "" || o.img.Name == "" {
		return errors.New("-out, -name and either -rootfs or -platform are required")
	}
	if o.gzip && o.rootfs != "" {
		return errors.New("-gzip needs -platform")
	}
	files, err := o.layout()
	if err != nil {
		return err
	}
	if err := writeFiles(o.out, files); err != nil {
		return err
	}
	if o.digestFile == "" {
		return nil
	}
	digest, err := imageDigest(files)
	if err != nil {
		return err
	}
	return os.WriteFile(o.digestFile, []byte(digest+"\n"), 0o644)
}

// layout packs the root filesystems into the layout's files.
func (o options) layout() (map[string][]byte, error) {
	if o.rootfs != "" {
		layer, err := TarDir(o.rootfs)
		if err != nil {
			return nil, err
		}
		return Layout(o.img, layer)
	}
	var platforms []Platform
	for _, p := range o.platforms {
		arch, dir, ok := strings.Cut(p, "=")
		if !ok || arch == "" || dir == "" {
			return nil, fmt.Errorf("-platform %q: want ARCH=DIR", p)
		}
		layer, err := TarDir(dir)
		if err != nil {
			return nil, err
		}
		platforms = append(platforms, Platform{Arch: arch, Layer: layer})
	}
	return IndexLayout(o.img, platforms, o.gzip)
}
