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

	"github.com/probelet/probelet/internal/atomicfile"
)

// stagedPrefix starts the name of every temporary copy.
const stagedPrefix = ".probelet-install-"

// writeAtomic writes content to a temporary file in stagingDir and renames
// it onto dest, so readers see the old file or the complete new one.
func writeAtomic(stagingDir, dest string, content io.Reader, mode fs.FileMode) error {
	err := atomicfile.Write(stagingDir, stagedPrefix, dest, content, mode)
	switch {
	case errors.Is(err, syscall.EXDEV):
		return fmt.Errorf("install %s: staging directory %s is on another filesystem: %w", dest, stagingDir, err)
	case err != nil:
		return fmt.Errorf("install %s: %w", dest, err)
	}
	return nil
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
