package nriinstall

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// writeAtomic writes content to a temporary file in stagingDir and renames
// it onto dest, so readers see the old file or the complete new one.
func writeAtomic(stagingDir, dest string, content []byte, mode fs.FileMode) (err error) {
	tmp, err := os.CreateTemp(stagingDir, ".probelet-install-*")
	if err != nil {
		return fmt.Errorf("stage %s: %w", dest, err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	if err := fill(tmp, content, mode); err != nil {
		return fmt.Errorf("stage %s: %w", dest, err)
	}
	if err := os.Rename(tmp.Name(), dest); err != nil {
		if errors.Is(err, syscall.EXDEV) {
			return fmt.Errorf("install %s: staging directory %s is on another filesystem: %w", dest, stagingDir, err)
		}
		return fmt.Errorf("install %s: %w", dest, err)
	}
	return syncDir(filepath.Dir(dest))
}

// fill writes, flushes and closes f with its final mode.
func fill(f *os.File, content []byte, mode fs.FileMode) error {
	_, err := f.Write(content)
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

// syncDir makes a rename durable across a node crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
