package nriinstall

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// stagedPrefix starts the name of every temporary copy.
const stagedPrefix = ".probelet-install-"

// writeAtomic writes content to a temporary file in stagingDir and renames
// it onto dest, so readers see the old file or the complete new one.
func writeAtomic(stagingDir, dest string, content io.Reader, mode fs.FileMode) (err error) {
	tmp, err := os.CreateTemp(stagingDir, stagedPrefix+"*")
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

// removeStaged removes the temporary copies an installer killed between
// writing and renaming left in dir (a missing dir has none).
func removeStaged(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), stagedPrefix) && e.Type().IsRegular() {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("remove a stale staged copy: %w", err)
			}
		}
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

// syncDir makes a rename durable across a node crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
