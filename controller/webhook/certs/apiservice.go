package certs

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// CABundles reads and writes an APIService's spec.caBundle.
type CABundles interface {
	CABundle(ctx context.Context, name string) ([]byte, error)
	SetCABundle(ctx context.Context, name string, bundle []byte) error
}

var apiServices = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// DynamicAPIServices is CABundles over a dynamic client: the aggregator's
// typed clientset would be a module for two fields.
type DynamicAPIServices struct{ Client dynamic.Interface }

var _ CABundles = DynamicAPIServices{}

func (d DynamicAPIServices) CABundle(ctx context.Context, name string) ([]byte, error) {
	u, err := d.Client.Resource(apiServices).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	s, _, err := unstructured.NestedString(u.Object, "spec", "caBundle")
	if err != nil || s == "" {
		return nil, err
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("APIService %s's caBundle: %w", name, err)
	}
	return b, nil
}

// SetCABundle patches only spec.caBundle (and the admission policy lets
// the controller change nothing else).
func (d DynamicAPIServices) SetCABundle(ctx context.Context, name string, bundle []byte) error {
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"caBundle": bundle}}) // []byte marshals as base64
	_, err := d.Client.Resource(apiServices).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}
