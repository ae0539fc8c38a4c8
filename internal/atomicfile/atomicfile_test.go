package atomicfile_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/probelet/probelet/internal/atomicfile"
)

func TestWriteFileReplacesAndLeavesNoCopy(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	for _, data := range []string{"first", "second, longer"} {
		if err := atomicfile.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != data {
			t.Fatalf("file = %q, %v; want %q", got, err, data)
		}
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode = %v, %v; want 0600", fi.Mode(), err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the file", len(entries))
	}
}

func TestWriteRemovesTheStagedCopyOnFailure(t *testing.T) {
	staging := t.TempDir()
	dest := filepath.Join(t.TempDir(), "absent", "file") // its directory does not exist
	err := atomicfile.Write(staging, ".stage-", dest, bytes.NewReader([]byte("x")), 0o644)
	if err == nil {
		t.Fatal("Write into a missing directory succeeded")
	}
	entries, _ := os.ReadDir(staging)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".stage-") {
			t.Errorf("staged copy %s left behind", e.Name())
		}
	}
}
