// Package proxy puts probelet between the kubelet and containerd on the CRI
// socket (--cri-proxy-listen). It serves runtime.v1.RuntimeService and
// ImageService and forwards every call to containerd unchanged: the
// request's bytes, the response's bytes, status codes, messages, details,
// header and trailer metadata, and the caller's deadline. Methods of those
// two services it does not know (a newer kubelet's) are forwarded the same
// way. Every other method (containerd's own API, containerd.services.*,
// which containerd serves on the same socket; gRPC health; reflection)
// answers Unimplemented and is never forwarded. Metric labels name a
// method of this build's CRI or "other", never what a caller sent.
//
// Three kinds of calls are handled rather than only forwarded:
//
//   - the kubelet's relist reads (ListPodSandbox, ListContainers,
//     PodSandboxStatus, ContainerStatus) are answered from a memo of
//     containerd's own last answer to the byte-identical request, dropped
//     on every change it hears of (NRI, containerd's own container events,
//     mutating calls through the proxy, errors); a miss asks containerd.
//     An answer is therefore always one containerd gave (memo.go);
//   - GetContainerEvents is served by probelet: every change is confirmed
//     with containerd before it is announced, and after a containerd
//     restart probelet lists again and announces what changed meanwhile,
//     so the kubelet's stream survives the restart (events.go);
//   - calls that change state invalidate the memo before and after they
//     are forwarded (methods.go).
//
// Shadow mode (WithVerify) compares cached answers with containerd's fresh
// answer and counts the differences (verify.go).
package proxy
