{{/*
  Pieces both Deployments share for running in a real cluster: restarts on Secret
  changes, a startup probe, a drain on stop, spreading over nodes, and the combinations
  of values that cannot work.
*/}}

{{/* Rolls the pods when the chart's Secret changes (or another existingSecret is named). */}}
{{- define "agent-tasks.secretChecksum" -}}
{{- if .Values.secrets.existingSecret }}
{{- .Values.secrets.existingSecret | sha256sum }}
{{- else }}
{{- include (print $.Template.BasePath "/secret.yaml") . | sha256sum }}
{{- end }}
{{- end }}

{{/* Liveness waits for the first answer; the startup probe gives a slow first boot (migrations) its time. */}}
{{- define "agent-tasks.startupProbe" -}}
startupProbe:
  httpGet:
    path: /livez
    port: http
  periodSeconds: 2
  timeoutSeconds: 2
  failureThreshold: {{ .Values.startupProbe.failureThreshold }}
{{- end }}

{{/* Endpoints are removed asynchronously: keep answering a few seconds before SIGTERM. */}}
{{- define "agent-tasks.preStop" -}}
lifecycle:
  preStop:
    exec:
      command: ["sleep", {{ .Values.preStopSleepSeconds | quote }}]
{{- end }}

{{/* (dict "root" $ "component" "controller"): spread replicas over nodes, best effort. */}}
{{- define "agent-tasks.topologySpread" -}}
{{- if .root.Values.topologySpread.enabled }}
topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: {{ .root.Values.topologySpread.topologyKey }}
    whenUnsatisfiable: {{ .root.Values.topologySpread.whenUnsatisfiable }}
    labelSelector:
      matchLabels:
        {{- include "agent-tasks.selectorLabels" (dict "root" .root "component" .component) | nindent 8 }}
{{- end }}
{{- end }}

{{/* Values that render but cannot work. */}}
{{- define "agent-tasks.assertWorkable" -}}
{{- if and .Values.controller.enabled (gt (int .Values.controller.replicaCount) 1) (not .Values.redis.url) (not .Values.secrets.existingSecret) }}
{{- fail "controller.replicaCount > 1 needs redis.url: rate limits, OAuth tokens and caches are shared through Redis" }}
{{- end }}
{{- if and .Values.dispatcher.enabled (not .Values.dispatcher.serviceAccount.create) (not .Values.dispatcher.serviceAccount.name) }}
{{- fail "dispatcher.serviceAccount.create=false needs dispatcher.serviceAccount.name: the Role that creates Jobs would otherwise be bound to the namespace's default ServiceAccount" }}
{{- end }}
{{- if not (or .Values.controller.enabled .Values.dispatcher.enabled) }}
{{- fail "controller.enabled and dispatcher.enabled are both false: nothing to install" }}
{{- end }}
{{- end }}

{{/* The agents' ServiceAccount name: the chart's (no permissions, no token) unless another is named. */}}
{{- define "agent-tasks.agentServiceAccountName" -}}
{{- default (printf "%s-agent" (include "agent-tasks.fullname" .)) .Values.agents.serviceAccount.name }}
{{- end }}

{{/* KUBE_POD_TEMPLATE: dispatcher.kubernetes.podTemplate with the agents' ServiceAccount unless it names one. */}}
{{- define "agent-tasks.agentPodTemplate" -}}
{{- $template := deepCopy (.Values.dispatcher.kubernetes.podTemplate | default dict) }}
{{- $spec := get $template "spec" | default dict }}
{{- if and (not (hasKey $spec "serviceAccountName")) (or .Values.agents.serviceAccount.create .Values.agents.serviceAccount.name) }}
{{- $_ := set $spec "serviceAccountName" (include "agent-tasks.agentServiceAccountName" .) }}
{{- end }}
{{- if $spec }}
{{- $_ := set $template "spec" $spec }}
{{- end }}
{{- toJson $template }}
{{- end }}
