package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// Locate sets Dir, unless set, to hack/Name: next to this source file when
// the build kept source paths, else the nearest one above the working
// directory.
func (s *Scripts) Locate() error {
	if s.Dir != "" {
		return nil
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		dir := filepath.Join(filepath.Dir(file), "..", "..", "..", "hack", s.Name)
		if isScriptsDir(dir) {
			s.Dir = filepath.Clean(dir)
			return nil
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if cand := filepath.Join(dir, "hack", s.Name); isScriptsDir(cand) {
			s.Dir = cand
			return nil
		}
		if dir == filepath.Dir(dir) {
			return fmt.Errorf("%s: hack/%s/up.sh not found above %s", s.Name, s.Name, wd)
		}
	}
}

func isScriptsDir(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, "up.sh"))
	return err == nil && st.Mode().IsRegular()
}
