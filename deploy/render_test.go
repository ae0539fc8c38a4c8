package deploy_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// trees are the kustomize directories copied into in-memory filesystems.
var trees = []string{"base", "components", "overlays", "controller"}

// memRoot is where memFS puts deploy/'s trees.
const memRoot = "/deploy"

// rendered is one object of a kustomize build.
type rendered struct {
	id   string // kind namespace/name, for messages
	json []byte
}

// build runs kustomize's own engine (the one behind `kubectl kustomize`) on
// dir with the default options: load restrictions on, no plugins.
func build(fsys filesys.FileSystem, dir string) ([]rendered, error) {
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	var out []rendered
	for _, r := range m.Resources() {
		b, err := r.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.CurId(), err)
		}
		id := fmt.Sprintf("%s %s/%s", r.GetKind(), r.GetNamespace(), r.GetName())
		out = append(out, rendered{id: id, json: b})
	}
	return out, nil
}

// memFS copies deploy/'s kustomize trees into an in-memory filesystem under
// memRoot, so a test can put its own kustomization around them.
func memFS(t *testing.T) filesys.FileSystem {
	t.Helper()
	mem := filesys.MakeFsInMemory()
	for _, tree := range trees {
		err := filepath.WalkDir(tree, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			return mem.WriteFile(filepath.Join(memRoot, path), b)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return mem
}

// writeKustomization adds dir/kustomization.yaml to fsys.
func writeKustomization(t *testing.T, fsys filesys.FileSystem, dir, content string) {
	t.Helper()
	if err := fsys.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(content)); err != nil {
		t.Fatal(err)
	}
}
