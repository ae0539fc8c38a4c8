package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func buildMulti(t *testing.T, extra ...string) (archive []byte, digest string) {
	t.Helper()
	dir := t.TempDir()
	out, digestFile := filepath.Join(dir, "img.tar"), filepath.Join(dir, "digest")
	args := append([]string{"-platform", "amd64=testdata/rootfs", "-platform", "arm64=testdata/rootfs",
		"-gzip", "-name", "localhost/probelet/multi:v1", "-entrypoint", "/bin/hello", "-out", out, "-digest-file", digestFile}, extra...)
	if err := run(args); err != nil {
		t.Fatalf("run: %v", err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	d, err := os.ReadFile(digestFile)
	if err != nil {
		t.Fatal(err)
	}
	return data, strings.TrimSpace(string(d))
}

func TestMultiPlatformArchiveIsAnIndex(t *testing.T) {
	archive, digest := buildMulti(t)
	files, _ := readTar(t, archive)
	var top index
	blobOfJSON(t, files["index.json"], &top)
	if len(top.Manifests) != 1 {
		t.Fatalf("index.json names %d images, want 1", len(top.Manifests))
	}
	entry := top.Manifests[0]
	if entry.MediaType != mediaTypeIndex || entry.Digest != digest || entry.Platform != nil ||
		entry.Annotations[annotationName] != "localhost/probelet/multi:v1" || entry.Annotations[annotationRefName] != "v1" {
		t.Fatalf("index.json entry = %+v, digest file %s", entry, digest)
	}
	var idx index
	blobOf(t, files, entry.Digest, &idx)
	var archs []string
	for _, m := range idx.Manifests {
		if m.MediaType != mediaTypeManifest || m.Platform == nil || m.Platform.OS != "linux" || m.Annotations != nil {
			t.Errorf("index entry %+v", m)
			continue
		}
		archs = append(archs, m.Platform.Architecture)
		checkPlatformManifest(t, files, m)
	}
	if strings.Join(archs, ",") != "amd64,arm64" {
		t.Errorf("platforms %v, want amd64,arm64 in the order given", archs)
	}
}

// checkPlatformManifest checks one platform's manifest: a gzip'ed layer
// whose uncompressed digest is the config's diff_id, and the config's
// architecture.
func checkPlatformManifest(t *testing.T, files map[string][]byte, m descriptor) {
	t.Helper()
	var mf manifest
	blobOf(t, files, m.Digest, &mf)
	var cfg imageConfig
	blobOf(t, files, mf.Config.Digest, &cfg)
	if cfg.Architecture != m.Platform.Architecture || strings.Join(cfg.Config.Entrypoint, " ") != "/bin/hello" {
		t.Errorf("config %+v for platform %+v", cfg, m.Platform)
	}
	if len(mf.Layers) != 1 || mf.Layers[0].MediaType != mediaTypeLayerGzip {
		t.Fatalf("layers %+v, want one gzip layer", mf.Layers)
	}
	zr, err := gzip.NewReader(bytes.NewReader(blobOf(t, files, mf.Layers[0].Digest, nil)))
	if err != nil {
		t.Fatal(err)
	}
	layer, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(layer)
	if diffID := "sha256:" + hex.EncodeToString(sum[:]); len(cfg.RootFS.DiffIDs) != 1 || cfg.RootFS.DiffIDs[0] != diffID {
		t.Errorf("diff_ids %v, uncompressed layer %s", cfg.RootFS.DiffIDs, diffID)
	}
	if zr.Header.Name != "" || !zr.Header.ModTime.IsZero() {
		t.Errorf("gzip header carries name %q, time %v", zr.Header.Name, zr.Header.ModTime)
	}
	checkLayer(t, layer)
}

func blobOfJSON(t *testing.T, data []byte, v any) {
	t.Helper()
	sum := sha256.Sum256(data)
	blobOf(t, map[string][]byte{"blobs/sha256/" + hex.EncodeToString(sum[:]): data}, "sha256:"+hex.EncodeToString(sum[:]), v)
}

func TestMultiPlatformArchiveIsDeterministic(t *testing.T) {
	a, da := buildMulti(t)
	b, db := buildMulti(t)
	if !bytes.Equal(a, b) || da != db {
		t.Errorf("two builds differ: digests %s, %s", da, db)
	}
}

func TestMultiPlatformRejectsBadInput(t *testing.T) {
	out := filepath.Join(t.TempDir(), "x.tar")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"rootfs and platform", []string{"-rootfs", "testdata/rootfs", "-platform", "amd64=testdata/rootfs", "-out", out, "-name", "a:b"}, "either -rootfs or -platform"},
		{"gzip single", []string{"-rootfs", "testdata/rootfs", "-gzip", "-out", out, "-name", "a:b"}, "-gzip needs -platform"},
		{"no dir", []string{"-platform", "amd64", "-out", out, "-name", "a:b"}, "want ARCH=DIR"},
		{"twice", []string{"-platform", "amd64=testdata/rootfs", "-platform", "amd64=testdata/rootfs", "-out", out, "-name", "a:b"}, "given twice"},
		{"missing dir", []string{"-platform", "arm64=testdata/nope", "-out", out, "-name", "a:b"}, "testdata/nope"},
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
