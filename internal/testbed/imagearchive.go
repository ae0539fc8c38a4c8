package testbed

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// OCI media types an ImageArchive understands.
const (
	mediaTypeIndex     = "application/vnd.oci.image.index.v1+json"
	mediaTypeManifest  = "application/vnd.oci.image.manifest.v1+json"
	mediaTypeLayer     = "application/vnd.oci.image.layer.v1.tar"
	mediaTypeLayerGzip = "application/vnd.oci.image.layer.v1.tar+gzip"
)

// ImageArchive is an OCI image layout tarball (what hack/testbed/mkimage
// and `make image` write) read into memory, for tests that look inside an
// image: its platforms, configuration and files.
type ImageArchive struct {
	// Name is the image name index.json gives (io.containerd.image.name).
	Name string
	// Digest is the digest of what index.json names: the image index of a
	// multi-platform image, else the one manifest.
	Digest string
	files  map[string][]byte
	// manifests by architecture.
	manifests map[string]ociDescriptor
	archs     []string
}

type ociDescriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Platform    *ociPlatform      `json:"platform,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type ociPlatform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

type ociIndex struct {
	Manifests []ociDescriptor `json:"manifests"`
}

type ociManifest struct {
	Config ociDescriptor   `json:"config"`
	Layers []ociDescriptor `json:"layers"`
}

// ImageConfig is the part of an image configuration tests compare.
type ImageConfig struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Config       struct {
		User       string   `json:"User"`
		Env        []string `json:"Env"`
		Entrypoint []string `json:"Entrypoint"`
		Cmd        []string `json:"Cmd"`
		WorkingDir string   `json:"WorkingDir"`
	} `json:"config"`
	RootFS struct {
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

// ImageFile is one entry of an image's layers.
type ImageFile struct {
	// Name is the path without a leading slash; directories end in "/".
	Name string
	// Type is the tar type flag (tar.TypeReg, tar.TypeDir, ...).
	Type     byte
	Mode     int64
	UID, GID int
	Data     []byte
}

// OpenImageArchive reads an OCI layout tarball and checks every blob it
// uses against its digest.
func OpenImageArchive(path string) (*ImageArchive, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	a := &ImageArchive{files: map[string][]byte{}, manifests: map[string]ociDescriptor{}}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		if a.files[h.Name], err = io.ReadAll(tr); err != nil {
			return nil, fmt.Errorf("%s: %s: %w", path, h.Name, err)
		}
	}
	if err := a.readIndex(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}

func (a *ImageArchive) readIndex() error {
	var top ociIndex
	if err := json.Unmarshal(a.files["index.json"], &top); err != nil {
		return fmt.Errorf("index.json: %w", err)
	}
	if len(top.Manifests) != 1 {
		return fmt.Errorf("index.json names %d images, want 1", len(top.Manifests))
	}
	entry := top.Manifests[0]
	a.Name, a.Digest = entry.Annotations["io.containerd.image.name"], entry.Digest
	entries := []ociDescriptor{entry}
	if entry.MediaType == mediaTypeIndex {
		var idx ociIndex
		if err := a.blobJSON(entry.Digest, &idx); err != nil {
			return err
		}
		entries = idx.Manifests
	}
	for _, m := range entries {
		if m.MediaType != mediaTypeManifest || m.Platform == nil {
			return fmt.Errorf("manifest %s: media type %s, platform %v", m.Digest, m.MediaType, m.Platform)
		}
		if _, dup := a.manifests[m.Platform.Architecture]; dup {
			return fmt.Errorf("two manifests for %s", m.Platform.Architecture)
		}
		a.manifests[m.Platform.Architecture] = m
		a.archs = append(a.archs, m.Platform.Architecture)
	}
	return nil
}

// blob returns a blob after checking its digest.
func (a *ImageArchive) blob(digest string) ([]byte, error) {
	data, ok := a.files["blobs/sha256/"+strings.TrimPrefix(digest, "sha256:")]
	if !ok {
		return nil, fmt.Errorf("blob %s missing", digest)
	}
	if got := digestOf(data); got != digest {
		return nil, fmt.Errorf("blob %s has digest %s", digest, got)
	}
	return data, nil
}

func (a *ImageArchive) blobJSON(digest string, v any) error {
	data, err := a.blob(digest)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("blob %s: %w", digest, err)
	}
	return nil
}

func digestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Platforms are the image's architectures, in the order it lists them.
func (a *ImageArchive) Platforms() []string { return append([]string(nil), a.archs...) }

func (a *ImageArchive) manifest(arch string) (ociManifest, error) {
	var mf ociManifest
	d, ok := a.manifests[arch]
	if !ok {
		return mf, fmt.Errorf("no linux/%s image in %v", arch, a.archs)
	}
	return mf, a.blobJSON(d.Digest, &mf)
}

// Config is the image configuration of arch.
func (a *ImageArchive) Config(arch string) (ImageConfig, error) {
	var cfg ImageConfig
	mf, err := a.manifest(arch)
	if err != nil {
		return cfg, err
	}
	return cfg, a.blobJSON(mf.Config.Digest, &cfg)
}

// Files returns every entry of arch's layers in order, after checking each
// uncompressed layer against the configuration's diff_ids.
func (a *ImageArchive) Files(arch string) ([]ImageFile, error) {
	mf, err := a.manifest(arch)
	if err != nil {
		return nil, err
	}
	cfg, err := a.Config(arch)
	if err != nil {
		return nil, err
	}
	if len(cfg.RootFS.DiffIDs) != len(mf.Layers) {
		return nil, fmt.Errorf("linux/%s: %d layers, %d diff_ids", arch, len(mf.Layers), len(cfg.RootFS.DiffIDs))
	}
	var out []ImageFile
	for i, l := range mf.Layers {
		layer, err := a.layer(l)
		if err != nil {
			return nil, err
		}
		if got := digestOf(layer); got != cfg.RootFS.DiffIDs[i] {
			return nil, fmt.Errorf("layer %s: uncompressed digest %s, diff_id %s", l.Digest, got, cfg.RootFS.DiffIDs[i])
		}
		files, err := layerFiles(layer)
		if err != nil {
			return nil, fmt.Errorf("layer %s: %w", l.Digest, err)
		}
		out = append(out, files...)
	}
	return out, nil
}

// ReadFile returns the content of the regular file name (no leading slash)
// in arch's layers.
func (a *ImageArchive) ReadFile(arch, name string) ([]byte, error) {
	files, err := a.Files(arch)
	if err != nil {
		return nil, err
	}
	for i := len(files) - 1; i >= 0; i-- {
		if files[i].Name == name && files[i].Type == tar.TypeReg {
			return files[i].Data, nil
		}
	}
	return nil, fmt.Errorf("linux/%s: no file %s", arch, name)
}

// layer returns a layer blob uncompressed.
func (a *ImageArchive) layer(d ociDescriptor) ([]byte, error) {
	data, err := a.blob(d.Digest)
	if err != nil {
		return nil, err
	}
	switch d.MediaType {
	case mediaTypeLayer:
		return data, nil
	case mediaTypeLayerGzip:
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(zr)
	}
	return nil, fmt.Errorf("layer %s: media type %s", d.Digest, d.MediaType)
}

func layerFiles(layer []byte) ([]ImageFile, error) {
	var out []ImageFile
	tr := tar.NewReader(bytes.NewReader(layer))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		out = append(out, ImageFile{Name: h.Name, Type: h.Typeflag, Mode: h.Mode, UID: h.Uid, GID: h.Gid, Data: data})
	}
}
