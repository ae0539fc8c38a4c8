package server

import (
	"context"
	"slices"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// imageService answers the ImageService calls crictl makes while listing
// containers (its client checks ImageFsInfo on connect), from the image
// references of known containers. Pull and remove are Unimplemented.
type imageService struct {
	runtimeapi.UnimplementedImageServiceServer
	s *Server
}

var _ runtimeapi.ImageServiceServer = (*imageService)(nil)

// ListImages lists the images known containers run.
func (i *imageService) ListImages(_ context.Context, req *runtimeapi.ListImagesRequest) (*runtimeapi.ListImagesResponse, error) {
	want := req.GetFilter().GetImage().GetImage()
	out := []*runtimeapi.Image{}
	for _, ref := range i.refs() {
		if want == "" || want == ref {
			out = append(out, criImage(ref))
		}
	}
	return &runtimeapi.ListImagesResponse{Images: out}, nil
}

// ImageStatus returns a known image; an unknown one is a nil image, which
// is CRI's "not present".
func (i *imageService) ImageStatus(_ context.Context, req *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	want := req.GetImage().GetImage()
	if slices.Contains(i.refs(), want) {
		return &runtimeapi.ImageStatusResponse{Image: criImage(want)}, nil
	}
	return &runtimeapi.ImageStatusResponse{}, nil
}

// ImageFsInfo reports no filesystems: probelet stores no images.
func (i *imageService) ImageFsInfo(context.Context, *runtimeapi.ImageFsInfoRequest) (*runtimeapi.ImageFsInfoResponse, error) {
	return &runtimeapi.ImageFsInfoResponse{}, nil
}

// refs are the distinct, sorted image references of known containers.
func (i *imageService) refs() []string {
	var refs []string
	for _, e := range i.s.snapshot().entries {
		if e.ctr.Image != "" {
			refs = append(refs, e.ctr.Image)
		}
	}
	slices.Sort(refs)
	return slices.Compact(refs)
}

// criImage describes an image by its reference alone: probelet knows no
// digests or sizes.
func criImage(ref string) *runtimeapi.Image {
	img := &runtimeapi.Image{Id: ref, Spec: &runtimeapi.ImageSpec{Image: ref}}
	if strings.Contains(ref, "@") {
		img.RepoDigests = []string{ref}
	} else {
		img.RepoTags = []string{ref}
	}
	return img
}
