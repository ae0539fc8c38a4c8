package deploy_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// TestSchemasUpToDate regenerates testdata/openapi/schemas.json with the
// generate directive of doc.go and compares. It never downloads: with
// GOPROXY=off it skips unless k8s.io/kubernetes is in the module cache.
func TestSchemasUpToDate(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`//go:generate go run (\S+) -version (\S+) -out (\S+)`).FindSubmatch(doc)
	if m == nil {
		t.Fatal("doc.go has no schemagen go:generate line")
	}
	gen, version, out := string(m[1]), string(m[2]), string(m[3])
	download := exec.Command("go", "mod", "download", "k8s.io/kubernetes@"+version)
	download.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=mod")
	if b, err := download.CombinedOutput(); err != nil {
		t.Skipf("k8s.io/kubernetes@%s is not in the module cache (go generate ./deploy fetches it): %s", version, b)
	}
	fresh := filepath.Join(t.TempDir(), "schemas.json")
	run := exec.Command("go", "run", gen, "-version", version, "-out", fresh)
	run.Env = append(os.Environ(), "GOPROXY=off")
	if b, err := run.CombinedOutput(); err != nil {
		t.Fatalf("schemagen: %v\n%s", err, b)
	}
	want, err := os.ReadFile(fresh)
	if err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, want) {
		t.Errorf("%s is stale: run go generate ./deploy", out)
	}
}
