// Package golden compares test output with golden files and rewrites them
// when the tests run with -update. It is the one place that registers the
// -update flag; only tests import it.
package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files the tests compare with")

// Check compares got with the file at path (relative to the test's
// package directory), or writes it there, creating its directory, when the
// test runs with -update.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run go test -run '%s' -update to create it): %v", t.Name(), err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output (run go test -run '%s' -update to accept):\n--- got ---\n%s\n--- want ---\n%s", path, t.Name(), got, want)
	}
}
