#!/usr/bin/env bash
# env.sh DIR: prints shell exports for the test bed in DIR; use it as
#   eval "$(hack/testbed/env.sh DIR)"
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"

dir=$(dir_arg "env.sh DIR" "$BED_MARKER" "$@")
bed_paths "$dir"
q() { printf '%q' "$1"; }
cat <<EOS
export PROBELET_TESTBED_DIR=$(q "$BED_DIR")
export PROBELET_TESTBED_RUNTIME=$(q "$BED_RUNTIME")
EOS
[ "$BED_RUNTIME" = containerd ] && cat <<EOS
export CONTAINERD_ADDRESS=$(q "$BED_SOCK")
export CONTAINERD_NAMESPACE=k8s.io
export CTR=$(q "$CTR_BIN --address $BED_SOCK --namespace k8s.io")
EOS
cat <<EOS
export CONTAINER_RUNTIME_ENDPOINT=$(q "unix://$BED_SOCK")
export IMAGE_SERVICE_ENDPOINT=$(q "unix://$BED_SOCK")
export PROBELET_CRI_ENDPOINT=$(q "unix://$BED_SOCK")
export PROBELET_NRI_SOCKET=$(q "$BED_NRI_SOCK")
export CRICTL=$(q "$CRICTL_BIN --config $BED_CRICTL_CONFIG --runtime-endpoint unix://$BED_SOCK --image-endpoint unix://$BED_SOCK")
export PROBELET_TESTBED_BRIDGE=$(q "$BED_BRIDGE")
export PROBELET_TESTBED_CGROUP_PARENT=$(q "$BED_CGROUP_PARENT")
export PROBELET_PAUSE_IMAGE=$(q "$PAUSE_IMAGE")
export PROBELET_BUSYBOX_IMAGE=$(q "$BUSYBOX_IMAGE")
EOS
