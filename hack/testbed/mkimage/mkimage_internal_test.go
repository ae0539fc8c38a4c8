package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// readTar returns every entry of a tar: regular file contents by name, and
// headers by name.
func readTar(t *testing.T, data []byte) (map[string][]byte, map[string]*tar.Header) {
	t.Helper()
	files, hdrs := map[string][]byte{}, map[string]*tar.Header{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files, hdrs
		}
		if err != nil {
			t.Fatalf("read tar: %v", err)
		}
		hdrs[h.Name] = h
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("read %s: %v", h.Name, err)
		}
		files[h.Name] = b
	}
}

func buildArchive(t *testing.T, img Image) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "img.tar")
	args := []string{"-rootfs", "testdata/rootfs", "-out", out, "-name", img.Name, "-arch", img.Arch}
	for _, c := range img.Cmd {
		args = append(args, "-cmd", c)
	}
	if err := run(args); err != nil {
		t.Fatalf("run: %v", err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func blobOf(t *testing.T, files map[string][]byte, digest string, v any) []byte {
	t.Helper()
	data, ok := files["blobs/sha256/"+strings.TrimPrefix(digest, "sha256:")]
	if !ok {
		t.Fatalf("blob %s missing", digest)
	}
	sum := sha256.Sum256(data)
	if got := "sha256:" + hex.EncodeToString(sum[:]); got != digest {
		t.Fatalf("blob %s has digest %s", digest, got)
	}
	if v != nil {
		if err := json.Unmarshal(data, v); err != nil {
			t.Fatalf("blob %s: %v", digest, err)
		}
	}
	return data
}

func TestArchiveIsAnImportableLayout(t *testing.T) {
	img := Image{Name: "localhost/probelet/test:v1", Arch: "amd64", Cmd: []string{"/bin/hello", "x"}}
	files, _ := readTar(t, buildArchive(t, img))
	if string(files["oci-layout"]) != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout = %q", files["oci-layout"])
	}
	var idx index
	if err := json.Unmarshal(files["index.json"], &idx); err != nil {
		t.Fatalf("index.json: %v", err)
	}
	if len(idx.Manifests) != 1 {
		t.Fatalf("index has %d manifests, want 1", len(idx.Manifests))
	}
	entry := idx.Manifests[0]
	if got := entry.Annotations[annotationName]; got != img.Name {
		t.Errorf("%s = %q, want %q", annotationName, got, img.Name)
	}
	if entry.Platform == nil || entry.Platform.Architecture != "amd64" || entry.Platform.OS != "linux" {
		t.Errorf("platform = %+v", entry.Platform)
	}
	var mf manifest
	blobOf(t, files, entry.Digest, &mf)
	var cfg imageConfig
	blobOf(t, files, mf.Config.Digest, &cfg)
	if len(mf.Layers) != 1 || len(cfg.RootFS.DiffIDs) != 1 || cfg.RootFS.DiffIDs[0] != mf.Layers[0].Digest {
		t.Fatalf("layers %+v do not match diff_ids %v", mf.Layers, cfg.RootFS.DiffIDs)
	}
	if strings.Join(cfg.Config.Cmd, " ") != "/bin/hello x" {
		t.Errorf("cmd = %q", cfg.Config.Cmd)
	}
	checkLayer(t, blobOf(t, files, mf.Layers[0].Digest, nil))
}

func checkLayer(t *testing.T, layer []byte) {
	t.Helper()
	files, hdrs := readTar(t, layer)
	want := map[string]byte{"bin/": tar.TypeDir, "bin/hello": tar.TypeReg, "etc/": tar.TypeDir, "etc/passwd": tar.TypeReg, "hello": tar.TypeSymlink}
	if len(hdrs) != len(want) {
		t.Errorf("layer has %d entries, want %d", len(hdrs), len(want))
	}
	for name, typ := range want {
		h, ok := hdrs[name]
		switch {
		case !ok:
			t.Errorf("layer lacks %s", name)
		case h.Typeflag != typ || h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(epoch):
			t.Errorf("%s: type %c uid %d gid %d mtime %v", name, h.Typeflag, h.Uid, h.Gid, h.ModTime)
		}
	}
	if h := hdrs["hello"]; h != nil && h.Linkname != "/bin/hello" {
		t.Errorf("hello links to %q", h.Linkname)
	}
	if h := hdrs["bin/hello"]; h != nil && h.Mode&0o111 == 0 {
		t.Errorf("bin/hello lost its exec bits: %o", h.Mode)
	}
	if !strings.Contains(string(files["etc/passwd"]), "root:x:0:0") {
		t.Errorf("etc/passwd = %q", files["etc/passwd"])
	}
}

func TestArchiveIsDeterministic(t *testing.T) {
	img := Image{Name: "localhost/probelet/test:v1", Arch: "amd64"}
	if a, b := buildArchive(t, img), buildArchive(t, img); !bytes.Equal(a, b) {
		t.Error("two builds of the same rootfs differ")
	}
}

func TestTagOf(t *testing.T) {
	for ref, want := range map[string]string{
		"localhost/probelet/pause:testbed": "testbed",
		"localhost:5000/busybox":           "latest",
		"busybox":                          "latest",
		"localhost:5000/busybox:1.36":      "1.36",
	} {
		if got := tagOf(ref); got != want {
			t.Errorf("tagOf(%q) = %q, want %q", ref, got, want)
		}
	}
}

func TestRunRejectsBadInput(t *testing.T) {
	fifoDir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(fifoDir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "x.tar")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no rootfs", []string{"-out", out, "-name", "a:b"}, "required"},
		{"no name", []string{"-rootfs", "testdata/rootfs", "-out", out}, "required"},
		{"missing rootfs", []string{"-rootfs", "testdata/nope", "-out", out, "-name", "a:b"}, "testdata/nope"},
		{"fifo in rootfs", []string{"-rootfs", fifoDir, "-out", out, "-name", "a:b"}, "unsupported file type"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := run(tc.args)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("run(%q) = %v, want error containing %q", tc.args, err, tc.want)
			}
			if _, statErr := os.Stat(out); statErr == nil {
				t.Errorf("%s written despite the error", out)
			}
		})
	}
}
