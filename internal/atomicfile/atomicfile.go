// Package atomicfile replaces files so that a reader, or a node that
// crashes, sees the old file or the complete new one, never a part: write
// a temporary copy, fsync it, rename it over the file, fsync the directory.
//
// It is probelet's own rather than github.com/google/renameio: renameio
// does not fsync the directory after the rename, which is what makes the
// replacement survive a power cut, and it stages in a directory of its
// choosing, where the installer must stage in the one it is given.
package atomicfile

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFile replaces path with data, staging the copy beside it (a dot
// file named after it) with mode.
func WriteFile(path string, data []byte, mode fs.FileMode) error {
	return Write(filepath.Dir(path), "."+filepath.Base(path)+".", path, bytes.NewReader(data), mode)
}

// Write replaces dest with content, staging the copy in stagingDir (on
// dest's filesystem) under a name starting with prefix. A staged copy is
// removed when the write fails; one left by a crash keeps the prefix, so
// the caller can find it.
func Write(stagingDir, prefix, dest string, content io.Reader, mode fs.FileMode) (err error) {
	tmp, err := os.CreateTemp(stagingDir, prefix+"*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	if err := fill(tmp, content, mode); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), dest); err != nil {
		return err
	}
	if err := syncDir(filepath.Dir(dest)); err != nil {
		return fmt.Errorf("sync the directory of %s: %w", dest, err)
	}
	return nil
}

// fill writes, flushes and closes f with its final mode.
func fill(f *os.File, content io.Reader, mode fs.FileMode) error {
	_, err := io.Copy(f, content)
	if err == nil {
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// syncDir makes a rename in dir durable across a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
