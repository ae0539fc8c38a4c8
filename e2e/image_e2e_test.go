//go:build e2e

package e2e_test

import (
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/probelet/probelet/internal/testbed"
)

// e2eImageName is what the e2e suite names the image it builds.
const e2eImageName = "localhost/probelet/probelet:e2e"

// image is probelet's OCI image as `make image` builds it (every platform),
// built once per test binary by the first test that needs it.
var image struct {
	once    sync.Once
	archive string
	digest  string
	err     error
}

// probeletImage builds the image with hack/image/build.sh on first use
// and returns the archive; a failed build fails every test that needs it.
func probeletImage(t *testing.T) (archive, digest string) {
	t.Helper()
	image.once.Do(func() {
		out := filepath.Join(bins.dir, "probelet.oci.tar")
		start := time.Now()
		cmd := exec.Command(filepath.Join(repoRoot(), "hack", "image", "build.sh"),
			"--out", out, "--name", e2eImageName, "--version", "e2e")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		stdout, err := cmd.Output()
		if err != nil {
			image.err = fmt.Errorf("hack/image/build.sh: %w\n%s", err, stderr.String())
			return
		}
		for line := range strings.Lines(string(stdout)) {
			if d, ok := strings.CutPrefix(strings.TrimSpace(line), "digest="); ok {
				image.digest = d
			}
		}
		image.archive = out
		t.Logf("built %s (%s) in %v", e2eImageName, image.digest, time.Since(start).Round(time.Second))
	})
	if image.err != nil {
		t.Fatal(image.err)
	}
	return image.archive, image.digest
}

// imageBinary extracts usr/local/bin/NAME of the host's platform from the
// image into dir and returns its path.
func imageBinary(t *testing.T, archive, name, dir string) string {
	t.Helper()
	a, err := testbed.OpenImageArchive(archive)
	if err != nil {
		t.Fatal(err)
	}
	data, err := a.ReadFile(runtime.GOARCH, "usr/local/bin/"+name)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestImage: `make image`'s archive holds amd64 and arm64 static binaries
// of the right machine, containerd imports it, and its binaries run in a
// container of the bed: probelet, probectl (found through the image's
// PATH) and the installer (installing the image's probelet inside it).
func TestImage(t *testing.T) {
	t.Parallel()
	archive, digest := probeletImage(t)
	checkImagePlatforms(t, archive)
	bed := testbed.Start(t)
	if err := bed.ImportImage(archive); err != nil {
		t.Fatal(err)
	}
	out, err := bed.Ctr("images", "ls", "name=="+e2eImageName)
	if err != nil || !strings.Contains(string(out), digest) {
		t.Fatalf("ctr images ls: the image is not stored with its index digest %s: %v\n%s", digest, err, out)
	}
	if _, err := bed.Crictl("inspecti", e2eImageName); err != nil {
		t.Fatalf("CRI does not see the imported image: %v", err)
	}
	for _, tc := range []struct {
		name string
		cmd  []string
		want string
	}{
		{"probelet", []string{"/usr/local/bin/probelet", "version"}, "probelet e2e (go"},
		{"probectl", []string{"probectl", "--help"}, "probectl"},
		{"installer", []string{"probelet-nri-install", "--plugin-dir", "/tmp/plugins", "--config-dir", "/tmp/conf"}, "installed /tmp/plugins/10-probelet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := runToCompletion(t, bed, tc.name, tc.cmd)
			if !strings.Contains(logs, tc.want) {
				t.Errorf("%s printed %q, want %q in it", strings.Join(tc.cmd, " "), logs, tc.want)
			}
		})
	}
}

// checkImagePlatforms checks that each platform's binaries are static ELF
// executables for that machine.
func checkImagePlatforms(t *testing.T, archive string) {
	t.Helper()
	a, err := testbed.OpenImageArchive(archive)
	if err != nil {
		t.Fatal(err)
	}
	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	if got := a.Platforms(); len(got) != len(machines) {
		t.Fatalf("platforms %v, want amd64 and arm64", got)
	}
	for arch, machine := range machines {
		for _, bin := range []string{"probelet", "probectl", "probelet-nri-install"} {
			data, err := a.ReadFile(arch, "usr/local/bin/"+bin)
			if err != nil {
				t.Fatal(err)
			}
			f, err := elf.NewFile(bytes.NewReader(data))
			if err != nil {
				t.Fatalf("linux/%s %s: %v", arch, bin, err)
			}
			if f.Machine != machine || f.Type != elf.ET_EXEC || hasInterp(f) {
				t.Errorf("linux/%s %s: machine %v type %v interpreter %v; want a static %v executable", arch, bin, f.Machine, f.Type, hasInterp(f), machine)
			}
		}
	}
}

func hasInterp(f *elf.File) bool {
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return true
		}
	}
	return false
}

// runToCompletion runs cmd from the image in a pod of the bed, waits for
// it to exit 0 and returns its log.
func runToCompletion(t *testing.T, bed *testbed.Bed, name string, cmd []string) string {
	t.Helper()
	_, ctr, err := bed.RunPod(testbed.PodSpec{Name: "image-" + name, Container: testbed.ContainerSpec{
		Name: name, Image: e2eImageName, Command: cmd}})
	if err != nil {
		t.Fatal(err)
	}
	st := waitExited(t, bed, ctr, 30*time.Second)
	logs, err := bed.Crictl("logs", ctr)
	if err != nil {
		t.Fatal(err)
	}
	if st.ExitCode != 0 {
		t.Fatalf("%s exited %d: %s", strings.Join(cmd, " "), st.ExitCode, logs)
	}
	return string(logs)
}
