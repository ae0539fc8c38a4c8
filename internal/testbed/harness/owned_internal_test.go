package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// failedTB is a test that has failed; it collects its cleanups and the
// formats it logged.
type failedTB struct {
	testing.TB
	cleanups []func()
	logs     []string
}

func (f *failedTB) Failed() bool      { return true }
func (f *failedTB) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }
func (f *failedTB) Logf(format string, args ...any) {
	f.logs = append(f.logs, format)
	f.TB.Logf(format, args...)
}

// fakeScripts is a scripts dir whose gc.sh and down.sh append their
// arguments to calls; down.sh removes the directory as the real ones do.
func fakeScripts(t *testing.T) (Scripts, string) {
	dir := t.TempDir()
	calls := filepath.Join(dir, "calls")
	for name, body := range map[string]string{
		"gc.sh":   `echo "gc $*" >>"$(dirname "$0")/calls"`,
		"down.sh": `echo "down $*" >>"$(dirname "$0")/calls"; rm -rf "$1"`,
	} {
		writeFile(t, filepath.Join(dir, name), "#!/bin/sh\n"+body+"\n")
		if err := os.Chmod(filepath.Join(dir, name), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s := NewScripts("fake", time.Minute)
	s.Dir = dir
	return s, calls
}

var fakeKind = Kind{Noun: "thing", Prefix: "pht-", Marker: ".probelet-fake", Down: []string{"down.sh"},
	Logs: []Log{{File: "thing.log", Lines: 5}}}

func TestClaimMarksAndStopsOnce(t *testing.T) {
	s, calls := fakeScripts(t)
	o, err := Claim(t, s, fakeKind)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(filepath.Base(o.Dir()), "pht-") {
		t.Errorf("dir %s lacks the prefix", o.Dir())
	}
	for _, f := range []string{fakeKind.Marker, OwnerFile} {
		if _, err := os.Stat(filepath.Join(o.Dir(), f)); err != nil {
			t.Errorf("claimed dir: %v", err)
		}
	}
	for range 2 {
		if err := o.Stop(); err != nil {
			t.Fatal(err)
		}
	}
	data, _ := os.ReadFile(calls)
	if want := "gc " + shortTempBase() + "\ndown " + o.Dir() + "\n"; string(data) != want {
		t.Errorf("scripts ran:\n%s\nwant:\n%s", data, want)
	}
	if (*Owned)(nil).Stop() != nil || (*Owned)(nil).Dir() != "" {
		t.Error("a nil Owned is not a no-op")
	}
}

func TestKeepOnFailure(t *testing.T) {
	for _, keep := range []string{"1", ""} {
		t.Run("PROBELET_TESTBED_KEEP="+keep, func(t *testing.T) {
			t.Setenv("PROBELET_TESTBED_KEEP", keep)
			s, calls := fakeScripts(t)
			ft := &failedTB{TB: t}
			o, err := Claim(ft, s, fakeKind)
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(o.Dir())
			ft.cleanups[0]()
			data, _ := os.ReadFile(calls)
			_, ownerErr := os.Stat(filepath.Join(o.Dir(), OwnerFile))
			downRan := strings.Contains(string(data), "down ")
			if keep == "1" && (downRan || ownerErr == nil) {
				t.Errorf("kept: down ran %v, owner file left %v", downRan, ownerErr == nil)
			}
			if keep == "" && !downRan {
				t.Error("not kept, yet down.sh did not run")
			}
			if !strings.Contains(strings.Join(ft.logs, "\n"), "last lines of") {
				t.Errorf("the failed test's logs were not shown: %q", ft.logs)
			}
		})
	}
}
