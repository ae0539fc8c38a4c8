package deploy_test

import (
	"archive/tar"
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/probelet/probelet/internal/testbed"
)

// imageRootfs holds the files besides the binaries that both the Dockerfile
// and `make image` (hack/image/build.sh) put into the image.
const imageRootfs = "hack/image/rootfs"

// imageBuilder is `make image`'s script.
const imageBuilder = "hack/image/build.sh"

// imageEntry is what "the same file set" compares: path, type, mode, owner.
type imageEntry struct {
	name     string // no leading slash; directories end in "/"
	typ      byte
	mode     int64
	uid, gid int
}

func (e imageEntry) String() string {
	return fmt.Sprintf("%s type=%c mode=%04o owner=%d:%d", e.name, e.typ, e.mode, e.uid, e.gid)
}

// TestImageMatchesDockerfile builds the image the way `make image` does,
// with stand-in binaries instead of compiled ones, and checks that it holds
// exactly the files the Dockerfile's image stage produces (paths, types,
// modes, owners, the implied parent directories), the same entrypoint and
// environment and no user, for every platform.
func TestImageMatchesDockerfile(t *testing.T) {
	stages, err := parseDockerfile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	image := stages[len(stages)-1]
	want, err := dockerfileFiles(image)
	if err != nil {
		t.Fatal(err)
	}
	archive, fakes := buildImageWithFakes(t, []string{"amd64", "arm64"}, time.Now())
	a, err := testbed.OpenImageArchive(archive)
	if err != nil {
		t.Fatal(err)
	}
	if got := a.Platforms(); !slices.Equal(got, []string{"amd64", "arm64"}) {
		t.Errorf("platforms %v, want amd64 and arm64 in one index", got)
	}
	for _, arch := range a.Platforms() {
		t.Run(arch, func(t *testing.T) {
			files, err := a.Files(arch)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range files {
				got = append(got, imageEntry{f.Name, f.Type, f.Mode, f.UID, f.GID}.String())
				checkContent(t, arch, f, fakes)
			}
			if !slices.Equal(got, want) {
				t.Errorf("make image's files differ from the Dockerfile's:\n got:\n  %s\nwant:\n  %s",
					strings.Join(got, "\n  "), strings.Join(want, "\n  "))
			}
			checkImageConfig(t, a, arch, image)
		})
	}
}

// dockerfileFiles is the file set of an image stage FROM scratch: every
// COPY's targets with its --chmod and --chown (default 0:0), and the
// directories COPY creates for the destination (0755, root's). Sorted, as
// the layer is.
func dockerfileFiles(s stage) ([]string, error) {
	if s.base != "scratch" {
		return nil, fmt.Errorf("image stage FROM %s: only scratch has a known file set", s.base)
	}
	entries := map[string]imageEntry{}
	for _, in := range s.all("COPY") {
		mode, err := strconv.ParseInt(copyFlag(in, "chmod"), 8, 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: --chmod: %w", in.line, err)
		}
		uid, gid, err := chown(copyFlag(in, "chown"))
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", in.line, err)
		}
		fields := strings.Fields(in.args)
		dest := fields[len(fields)-1]
		if !strings.HasSuffix(dest, "/") {
			return nil, fmt.Errorf("line %d: destination %s is not a directory", in.line, dest)
		}
		for dir := strings.TrimPrefix(dest, "/"); dir != ""; dir = parentDir(dir) {
			entries[dir] = imageEntry{dir, tar.TypeDir, 0o755, 0, 0}
		}
		for _, target := range copyTargets(in, copySources(in)) {
			name := strings.TrimPrefix(target, "/")
			entries[name] = imageEntry{name, tar.TypeReg, mode, uid, gid}
		}
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		out = append(out, entries[name].String())
	}
	return out, nil
}

// parentDir is "usr/local/" for "usr/local/bin/", "" for "usr/".
func parentDir(dir string) string {
	p := path.Dir(strings.TrimSuffix(dir, "/"))
	if p == "." {
		return ""
	}
	return p + "/"
}

// chown reads --chown=UID:GID (numeric: scratch has no user names to look up).
func chown(v string) (uid, gid int, err error) {
	if v == "" {
		return 0, 0, nil
	}
	u, g, _ := strings.Cut(v, ":")
	if uid, err = strconv.Atoi(u); err != nil {
		return 0, 0, fmt.Errorf("--chown=%s: numeric ids only", v)
	}
	if g == "" {
		return uid, uid, nil
	}
	if gid, err = strconv.Atoi(g); err != nil {
		return 0, 0, fmt.Errorf("--chown=%s: numeric ids only", v)
	}
	return uid, gid, nil
}

// TestImageIsReproducible packs the same binaries twice under different
// conditions a build machine varies — file times, umask, the temporary
// directory — and expects the same archive, byte for byte. (That the
// binaries themselves come out the same from a cold build cache at another
// path is what `make image-reproducible` checks.)
func TestImageIsReproducible(t *testing.T) {
	first, _ := buildImageWithFakes(t, []string{"amd64", "arm64"}, time.Now())
	old := syscall.Umask(0o077)
	second, _ := buildImageWithFakes(t, []string{"amd64", "arm64"}, time.Now().Add(-48*time.Hour), "TMPDIR="+t.TempDir())
	syscall.Umask(old)
	a, err := os.ReadFile(first)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(second)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("two builds of the same inputs differ")
	}
}

// buildImageWithFakes runs `make image`'s script with small stand-in
// binaries (compiling them for two platforms takes minutes; the e2e suite
// builds the real thing) and returns the archive and the stand-ins'
// contents by arch/name. env is added to the script's environment.
func buildImageWithFakes(t *testing.T, archs []string, mtime time.Time, env ...string) (string, map[string][]byte) {
	t.Helper()
	dir := t.TempDir()
	fakes := map[string][]byte{}
	for _, arch := range archs {
		for _, bin := range []string{"probelet", "probectl", "kubectl-probelet", "probelet-nri-install", "probelet-controller"} {
			content := []byte("#!/bin/false\n# stand-in for " + arch + "/" + bin + "\n")
			// An owner-only mode on the input must not reach the image.
			if err := os.MkdirAll(filepath.Join(dir, "bin", arch), 0o700); err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(dir, "bin", arch, bin)
			if err := os.WriteFile(file, content, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(file, mtime, mtime); err != nil {
				t.Fatal(err)
			}
			fakes[arch+"/usr/local/bin/"+bin] = content
		}
	}
	out := filepath.Join(dir, "image.tar")
	cmd := exec.Command(filepath.Join(repoRoot, imageBuilder), "--bin-dir", filepath.Join(dir, "bin"),
		"--platforms", strings.Join(archs, ","), "--version", "test", "--out", out)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", imageBuilder, err, stderr.String())
	}
	if !regexp.MustCompile(`(?m)^digest=sha256:[0-9a-f]{64}$`).Match(stdout) {
		t.Errorf("%s printed no digest:\n%s", imageBuilder, stdout)
	}
	return out, fakes
}

// checkContent compares a file with its source: a stand-in binary or a
// file of hack/image/rootfs.
func checkContent(t *testing.T, arch string, f testbed.ImageFile, fakes map[string][]byte) {
	t.Helper()
	if f.Type != tar.TypeReg {
		return
	}
	want, ok := fakes[arch+"/"+f.Name]
	if !ok {
		var err error
		if want, err = os.ReadFile(filepath.Join(repoRoot, imageRootfs, f.Name)); err != nil {
			t.Errorf("%s: no source for it: %v", f.Name, err)
			return
		}
	}
	if !bytes.Equal(f.Data, want) {
		t.Errorf("%s: content differs from its source", f.Name)
	}
}

// checkImageConfig compares the image configuration with the Dockerfile's
// ENTRYPOINT, ENV and (absent) USER.
func checkImageConfig(t *testing.T, a *testbed.ImageArchive, arch string, s stage) {
	t.Helper()
	cfg, err := a.Config(arch)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Architecture != arch || cfg.OS != "linux" || cfg.Config.User != "" {
		t.Errorf("config: %s/%s user %q", cfg.OS, cfg.Architecture, cfg.Config.User)
	}
	ep := fmt.Sprintf("[%q]", strings.Join(cfg.Config.Entrypoint, `", "`))
	if want := argsOf(s.all("ENTRYPOINT")); len(want) != 1 || ep != want[0] {
		t.Errorf("entrypoint %s, Dockerfile %v", ep, want)
	}
	if want := argsOf(s.all("ENV")); !slices.Equal(cfg.Config.Env, want) {
		t.Errorf("env %q, Dockerfile %q", cfg.Config.Env, want)
	}
	if len(cfg.Config.Cmd) != 0 {
		t.Errorf("cmd %q, the Dockerfile sets none", cfg.Config.Cmd)
	}
}

// goBuildFlags are the flags of a `go build ... -o` command line, with the
// version written $VERSION.
func goBuildFlags(cmdline string) string {
	_, rest, ok := strings.Cut(cmdline, "go build ")
	if !ok {
		return ""
	}
	flags, _, _ := strings.Cut(rest, " -o ")
	flags = strings.ReplaceAll(flags, "${VERSION}", "$VERSION")
	return strings.Join(strings.Fields(flags), " ")
}

// imageBuildFlags are the go build flags hack/image/build.sh compiles the
// image's binaries with.
func imageBuildFlags(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, imageBuilder))
	if err != nil {
		t.Fatal(err)
	}
	script := strings.ReplaceAll(string(b), "\\\n", " ")
	stamp := regexp.MustCompile(`(?m)^STAMP=(\S+)$`).FindStringSubmatch(script)
	if stamp == nil {
		t.Fatalf("%s sets no STAMP", imageBuilder)
	}
	for line := range strings.Lines(script) {
		if strings.Contains(line, "go build ") && strings.Contains(line, "-ldflags") {
			return strings.ReplaceAll(goBuildFlags(line), "$STAMP", stamp[1])
		}
	}
	t.Fatalf("%s: no go build with -ldflags", imageBuilder)
	return ""
}
