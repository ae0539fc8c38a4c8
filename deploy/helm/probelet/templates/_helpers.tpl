{{/* Labels Helm's tooling expects; deploy/helm_test.go ignores exactly these. */}}
{{- define "probelet.helmLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}

{{/* Labels of the agent's objects (deploy/base's kustomization). */}}
{{- define "probelet.labels" -}}
app.kubernetes.io/name: probelet
app.kubernetes.io/part-of: probelet
{{ include "probelet.helmLabels" . }}
{{- end }}

{{/* Labels of the controller's objects (deploy/controller's kustomization). */}}
{{- define "probelet.controllerLabels" -}}
app.kubernetes.io/name: probelet-controller
app.kubernetes.io/part-of: probelet
{{ include "probelet.helmLabels" . }}
{{- end }}

{{/* Labels of objects only the pre-installed mode has. */}}
{{- define "probelet.installerLabels" -}}
app.kubernetes.io/part-of: probelet
{{ include "probelet.helmLabels" . }}
{{- end }}

{{- define "probelet.namespace" -}}
{{ required "namespace.name is required" .Values.namespace.name }}
{{- end }}

{{- define "probelet.image" -}}
{{- $repo := required "image.repository is required" .Values.image.repository -}}
{{- if .Values.image.digest -}}
{{ $repo }}@{{ .Values.image.digest }}
{{- else -}}
{{ $repo }}:{{ required "image.tag or image.digest is required" .Values.image.tag }}
{{- end }}
{{- end }}

{{/* The service account user name the admission policies match. */}}
{{- define "probelet.serviceAccountUser" -}}
system:serviceaccount:{{ include "probelet.namespace" .root }}:{{ .name }}
{{- end }}

{{/*
probelet.flagLines renders flags (a map of flag name to value) as
--name=value lines: the names in "first" in that order, then the others
sorted. A null value is left out (the daemon's default), a list repeats the
flag.
*/}}
{{- define "probelet.flagLines" -}}
{{- $flags := .flags -}}
{{- range .first }}
{{- include "probelet.flagLine" (list . (index $flags .)) }}
{{- end }}
{{- range $name, $value := $flags }}
{{- if not (has $name $.first) }}
{{- include "probelet.flagLine" (list $name $value) }}
{{- end }}
{{- end }}
{{- end }}

{{- define "probelet.flagLine" -}}
{{- $name := index . 0 -}}
{{- $value := index . 1 -}}
{{- if kindIs "slice" $value }}
{{- range $value }}
{{ printf "--%s=%v" $name . }}
{{- end }}
{{- else if not (kindIs "invalid" $value) }}
{{ printf "--%s=%v" $name $value }}
{{- end }}
{{- end }}

{{/* probelet.args is probelet.flagLines as a YAML list of arguments. */}}
{{- define "probelet.args" -}}
{{- range include "probelet.flagLines" . | trim | splitList "\n" }}
{{- if . }}
- {{ quote . }}
{{- end }}
{{- end }}
{{- end }}

{{/*
probelet.agentFlags is the agent's flags as YAML, with the lease namespace
filled in when the namespace is not the daemon's default, and the
runtime's CRI endpoint when none is given.
*/}}
{{- define "probelet.agentFlags" -}}
{{- $flags := deepCopy .Values.agent.flags -}}
{{- if kindIs "invalid" (index $flags "runtime-endpoint") }}
{{- $_ := set $flags "runtime-endpoint" (ternary "unix:///var/run/crio/crio.sock" "unix:///run/containerd/containerd.sock" (eq .Values.agent.runtime "crio")) }}
{{- end }}
{{- $ns := include "probelet.namespace" . -}}
{{- if and (kindIs "invalid" (index $flags "lease-namespace")) (ne $ns "probelet-system") }}
{{- $_ := set $flags "lease-namespace" $ns }}
{{- end }}
{{- toYaml $flags }}
{{- end }}

{{/* The metrics port: the port of agent.flags.metrics-bind-address. */}}
{{- define "probelet.metricsPort" -}}
{{- $addr := index .Values.agent.flags "metrics-bind-address" | default "" | toString -}}
{{- $port := regexFind "[0-9]+$" $addr -}}
{{- if not (and (contains ":" $addr) $port) -}}
{{- fail (printf "agent.flags.metrics-bind-address %q: the kubelet probes the agent's /healthz there, so it must be HOST:PORT" $addr) -}}
{{- end -}}
{{ $port }}
{{- end }}

{{/* The MutatingWebhookConfiguration's name (the controller's --webhook-config). */}}
{{- define "probelet.webhookConfig" -}}
{{ index .Values.controller.flags "webhook-config" | default "probelet" }}
{{- end }}

{{/* The webhook certificate Secret's name (the controller's --webhook-cert-secret). */}}
{{- define "probelet.webhookSecret" -}}
{{ index .Values.controller.flags "webhook-cert-secret" | default "probelet-webhook-tls" }}
{{- end }}

{{/*
probelet.controllerFlags is the controller's flags as YAML, with what
follows from the rest of the values filled in: the lease namespace, and the
webhook's listener and certificate names (or the webhook off).
*/}}
{{- define "probelet.controllerFlags" -}}
{{- $flags := deepCopy .Values.controller.flags -}}
{{- $ns := include "probelet.namespace" . -}}
{{- if kindIs "invalid" (index $flags "lease-namespace") }}
{{- $_ := set $flags "lease-namespace" $ns }}
{{- end }}
{{- if kindIs "invalid" (index $flags "webhook-listen") }}
{{- $_ := set $flags "webhook-listen" (ternary ":9443" "" .Values.webhook.enabled) }}
{{- end }}
{{- if kindIs "invalid" (index $flags "probe-api-listen") }}
{{- $_ := set $flags "probe-api-listen" (ternary ":6443" "" .Values.probeAPI.enabled) }}
{{- end }}
{{- if kindIs "invalid" (index $flags "webhook-cert-hosts") }}
{{- $hosts := list }}
{{- if .Values.webhook.enabled }}{{ $hosts = append $hosts (printf "probelet-webhook.%s.svc" $ns) }}{{ end }}
{{- if .Values.probeAPI.enabled }}{{ $hosts = append $hosts (printf "probelet-api.%s.svc" $ns) }}{{ end }}
{{- if $hosts }}
{{- $_ := set $flags "webhook-cert-hosts" (join "," $hosts) }}
{{- end }}
{{- end }}
{{- toYaml $flags }}
{{- end }}

{{/* The webhook's container port: the port of its --webhook-listen. */}}
{{- define "probelet.webhookPort" -}}
{{- $flags := include "probelet.controllerFlags" . | fromYaml -}}
{{- $addr := index $flags "webhook-listen" | toString -}}
{{- $port := regexFind "[0-9]+$" $addr -}}
{{- if not (and (contains ":" $addr) $port) -}}
{{- fail (printf "controller.flags.webhook-listen %q: webhook.enabled needs HOST:PORT" $addr) -}}
{{- end -}}
{{ $port }}
{{- end }}

{{/* The probe-state API's container port: the port of its --probe-api-listen. */}}
{{- define "probelet.probeAPIPort" -}}
{{- $flags := include "probelet.controllerFlags" . | fromYaml -}}
{{- $addr := index $flags "probe-api-listen" | toString -}}
{{- $port := regexFind "[0-9]+$" $addr -}}
{{- if not (and (contains ":" $addr) $port) -}}
{{- fail (printf "controller.flags.probe-api-listen %q: probeAPI.enabled needs HOST:PORT" $addr) -}}
{{- end -}}
{{ $port }}
{{- end }}

{{/*
probelet.nriConfig is the pre-installed plugin's configuration file: the
agent's flags, one per line, but for the NRI socket (containerd passes a
pre-connected one) and the node name (probelet on the host defaults to the
host name; $(NODE_NAME) is a pod's).
*/}}
{{- define "probelet.nriConfig" -}}
# probelet's configuration as a pre-installed NRI plugin: daemon flags, one
# per line ('#' starts a comment). containerd launches the plugin without
# arguments and hands it this file's content in NRI's Configure request.
# --nri-socket is absent: containerd passes a pre-connected socket instead.
{{- $flags := include "probelet.agentFlags" . | fromYaml }}
{{- $_ := unset $flags "nri-socket" }}
{{- $_ := unset $flags "node-name" }}
{{- /* The plugin under containerd has no API server to review the state listener's callers: it runs node-only. */}}
{{- $_ := unset $flags "state-listen" }}
{{- include "probelet.flagLines" (dict "flags" $flags "first" (list "runtime-endpoint" "listen" "metrics-bind-address" "tcp-mode" "state-dir")) }}
{{- end }}

{{- define "probelet.nriConfigName" -}}
probelet-nri-config-{{ include "probelet.nriConfig" . | sha256sum | trunc 10 }}
{{- end }}

{{/*
probelet.runtimeDir is the host directory of the runtime's CRI socket,
mounted into the agent: hostPaths.containerd or hostPaths.crio.
*/}}
{{- define "probelet.runtimeDir" -}}
{{- ternary .Values.agent.hostPaths.crio .Values.agent.hostPaths.containerd (eq .Values.agent.runtime "crio") -}}
{{- end }}
