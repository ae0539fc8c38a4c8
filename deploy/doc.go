// Package deploy holds probelet's installation: the kustomize base and
// components, the containerd NRI configuration snippets, the pre-installed
// plugin alternative and the image's Dockerfile. It has no Go API; its tests
// render every kustomization and check the objects against the Kubernetes
// OpenAPI schemas of the release the module builds against, and against the
// contracts the daemon relies on.
package deploy

// The schemas of k8s.io/kubernetes v1.37.1 (the same API as k8s.io/api
// v0.37.2; v1.37.2 itself is not served by the module proxy).
//go:generate go run ./internal/schemagen -version v1.37.2 -out testdata/openapi/schemas.json
