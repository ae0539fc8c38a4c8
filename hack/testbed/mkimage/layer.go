package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// epoch is every entry's mtime, so layers do not change with build time.
var epoch = time.Unix(0, 0).UTC()

// TarDir returns an uncompressed tar of dir's contents, owned by root, in
// lexical order with fixed times. Regular files, directories and symlinks
// are supported; anything else is an error naming the path.
func TarDir(dir string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		return addEntry(tw, path, filepath.ToSlash(rel), d)
	})
	if err != nil {
		return nil, fmt.Errorf("tar %s: %w", dir, err)
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func addEntry(tw *tar.Writer, path, name string, d fs.DirEntry) error {
	info, err := d.Info()
	if err != nil {
		return err
	}
	hdr, err := header(path, name, info)
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if hdr.Typeflag != tar.TypeReg {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(tw, f)
	return err
}

// header builds a reproducible tar header: no owner names, ids or times
// from the build machine.
func header(path, name string, info fs.FileInfo) (*tar.Header, error) {
	hdr := &tar.Header{Name: name, Mode: int64(info.Mode().Perm()), ModTime: epoch, Format: tar.FormatPAX}
	if info.Mode()&fs.ModeSticky != 0 {
		hdr.Mode |= 0o1000
	}
	switch {
	case info.Mode().IsRegular():
		hdr.Typeflag, hdr.Size = tar.TypeReg, info.Size()
	case info.IsDir():
		hdr.Typeflag, hdr.Name = tar.TypeDir, name+"/"
	case info.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(path)
		if err != nil {
			return nil, err
		}
		hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, target
	default:
		return nil, fmt.Errorf("%s: unsupported file type %v", path, info.Mode().Type())
	}
	return hdr, nil
}
