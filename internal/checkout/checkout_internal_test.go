package checkout

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRootIsTheNearestProbeletModuleAbove(t *testing.T) {
	dir := t.TempDir()
	deep := filepath.Join(dir, "a", "b")
	other := filepath.Join(dir, "a", "b", "vendor-ish")
	for _, d := range []string{deep, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(path, content string) {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "go.mod"), "module github.com/probelet/probelet\n\ngo 1.26\n")
	write(filepath.Join(other, "go.mod"), "module example.com/other\n")
	for _, from := range []string{dir, deep, other} {
		if got, err := rootAbove(from); err != nil || got != dir {
			t.Errorf("from %s: %q, %v; want %q", from, got, err, dir)
		}
	}
	if _, err := rootAbove(t.TempDir()); err == nil || !strings.Contains(err.Error(), "inside the probelet checkout") {
		t.Errorf("outside a checkout: %v", err)
	}
}

func TestRootFindsThisCheckout(t *testing.T) {
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "internal", "checkout", "checkout.go")); err != nil {
		t.Fatalf("root %s: %v", root, err)
	}
}
