package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// OCI media types and the annotation containerd names imported images by.
const (
	mediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaTypeIndex    = "application/vnd.oci.image.index.v1+json"
	mediaTypeConfig   = "application/vnd.oci.image.config.v1+json"
	mediaTypeLayer    = "application/vnd.oci.image.layer.v1.tar"
	// mediaTypeLayerGzip is a gzip'ed layer, what registries usually hold.
	mediaTypeLayerGzip = "application/vnd.oci.image.layer.v1.tar+gzip"
	annotationName     = "io.containerd.image.name"
	annotationRefName  = "org.opencontainers.image.ref.name"
)

// Image is what the archive says about the image besides its layer.
type Image struct {
	// Name is the full reference containerd stores the image under.
	Name string
	// Arch is the GOARCH-style architecture (amd64, arm64).
	Arch string
	// Entrypoint, Cmd and Env go into the image config.
	Entrypoint, Cmd, Env []string
}

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Platform    *platform         `json:"platform,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

type imageConfig struct {
	Architecture string    `json:"architecture"`
	OS           string    `json:"os"`
	Config       runConfig `json:"config"`
	RootFS       rootFS    `json:"rootfs"`
}

type runConfig struct {
	Env        []string `json:"Env,omitempty"`
	Entrypoint []string `json:"Entrypoint,omitempty"`
	Cmd        []string `json:"Cmd,omitempty"`
	WorkingDir string   `json:"WorkingDir"`
}

type rootFS struct {
	Type    string   `json:"type"`
	DiffIDs []string `json:"diff_ids"`
}

type manifest struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Config        descriptor   `json:"config"`
	Layers        []descriptor `json:"layers"`
}

type index struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Manifests     []descriptor `json:"manifests"`
}

// blob is one content-addressed file of the layout.
type blob struct {
	desc descriptor
	data []byte
}

func newBlob(mediaType string, data []byte) blob {
	sum := sha256.Sum256(data)
	return blob{desc: descriptor{MediaType: mediaType, Digest: "sha256:" + hex.EncodeToString(sum[:]), Size: int64(len(data))}, data: data}
}

func jsonBlob(mediaType string, v any) (blob, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return blob{}, err
	}
	return newBlob(mediaType, data), nil
}

// Platform is one architecture of a multi-platform image: its root
// filesystem as an uncompressed tar (TarDir).
type Platform struct {
	// Arch is the GOARCH-style architecture (amd64, arm64).
	Arch string
	// Layer is the uncompressed tar of the root filesystem.
	Layer []byte
}

// Layout returns the files of an OCI image layout (path → content) holding
// img with the single uncompressed layer.
func Layout(img Image, layer []byte) (map[string][]byte, error) {
	blobs, entry, err := platformImage(img, Platform{Arch: img.Arch, Layer: layer}, false)
	if err != nil {
		return nil, err
	}
	return layoutFiles(img.Name, entry, blobs)
}

// IndexLayout returns the files of an OCI image layout holding a
// multi-platform image: index.json names one image index (the blob a
// registry serves for the tag), which lists one manifest per platform in
// the order given. With compress the layers are gzip'ed (deterministically:
// no name, no time in the gzip header).
func IndexLayout(img Image, platforms []Platform, compress bool) (map[string][]byte, error) {
	if len(platforms) == 0 {
		return nil, errors.New("no platform")
	}
	var blobs []blob
	var manifests []descriptor
	seen := map[string]bool{}
	for _, p := range platforms {
		if seen[p.Arch] {
			return nil, fmt.Errorf("platform linux/%s given twice", p.Arch)
		}
		seen[p.Arch] = true
		pb, entry, err := platformImage(img, p, compress)
		if err != nil {
			return nil, err
		}
		blobs = append(blobs, pb...)
		manifests = append(manifests, entry)
	}
	idx, err := jsonBlob(mediaTypeIndex, index{SchemaVersion: 2, MediaType: mediaTypeIndex, Manifests: manifests})
	if err != nil {
		return nil, err
	}
	return layoutFiles(img.Name, idx.desc, append(blobs, idx))
}

// platformImage returns the layer, config and manifest blobs of one
// platform's image and the manifest's descriptor with its platform.
func platformImage(img Image, p Platform, compress bool) ([]blob, descriptor, error) {
	lb := newBlob(mediaTypeLayer, p.Layer)
	diffID := lb.desc.Digest
	if compress {
		gz, err := gzipBytes(p.Layer)
		if err != nil {
			return nil, descriptor{}, err
		}
		lb = newBlob(mediaTypeLayerGzip, gz)
	}
	cfg, err := jsonBlob(mediaTypeConfig, imageConfig{
		Architecture: p.Arch, OS: "linux",
		Config: runConfig{Env: img.Env, Entrypoint: img.Entrypoint, Cmd: img.Cmd, WorkingDir: "/"},
		RootFS: rootFS{Type: "layers", DiffIDs: []string{diffID}},
	})
	if err != nil {
		return nil, descriptor{}, err
	}
	mf, err := jsonBlob(mediaTypeManifest, manifest{SchemaVersion: 2, MediaType: mediaTypeManifest, Config: cfg.desc, Layers: []descriptor{lb.desc}})
	if err != nil {
		return nil, descriptor{}, err
	}
	entry := mf.desc
	entry.Platform = &platform{Architecture: p.Arch, OS: "linux"}
	return []blob{lb, cfg, mf}, entry, nil
}

// gzipBytes compresses data with a header that carries no name and no
// time, so the same data always gives the same bytes (with one Go version).
func gzipBytes(data []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(data); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// layoutFiles returns the layout's files: the blobs, oci-layout, and
// index.json naming entry (a manifest or an index) as the image name.
func layoutFiles(name string, entry descriptor, blobs []blob) (map[string][]byte, error) {
	entry.Annotations = map[string]string{annotationName: name, annotationRefName: tagOf(name)}
	idx, err := json.Marshal(index{SchemaVersion: 2, MediaType: mediaTypeIndex, Manifests: []descriptor{entry}})
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{"oci-layout": []byte(`{"imageLayoutVersion":"1.0.0"}`), "index.json": idx}
	for _, b := range blobs {
		files["blobs/sha256/"+strings.TrimPrefix(b.desc.Digest, "sha256:")] = b.data
	}
	return files, nil
}

// tagOf returns the tag of ref, or "latest" when it has none.
func tagOf(ref string) string {
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		return ref[i+1:]
	}
	return "latest"
}

// WriteArchive writes the layout of img with one uncompressed layer as a
// tar to path, atomically.
func WriteArchive(path string, img Image, layer []byte) error {
	files, err := Layout(img, layer)
	if err != nil {
		return err
	}
	return writeFiles(path, files)
}

// writeFiles writes layout files as a tar to path, atomically.
func writeFiles(path string, files map[string][]byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".mkimage-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := writeTar(tmp, files); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func writeTar(f *os.File, files map[string][]byte) error {
	tw := tar.NewWriter(f)
	for _, d := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o755, ModTime: epoch}); err != nil {
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		data := files[name]
		if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(data)), ModTime: epoch}); err != nil {
			return err
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	return tw.Close()
}

// imageDigest is the digest of the image index.json names.
func imageDigest(files map[string][]byte) (string, error) {
	var idx index
	if err := json.Unmarshal(files["index.json"], &idx); err != nil {
		return "", err
	}
	if len(idx.Manifests) != 1 {
		return "", fmt.Errorf("index.json names %d images, want 1", len(idx.Manifests))
	}
	return idx.Manifests[0].Digest, nil
}
