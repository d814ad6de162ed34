{{/* Chart name, truncated to a DNS label. */}}
{{- define "agent-tasks.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Release-qualified name. */}}
{{- define "agent-tasks.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "agent-tasks.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "agent-tasks.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Selector labels of one component: call with (dict "root" $ "component" "controller"). */}}
{{- define "agent-tasks.selectorLabels" -}}
app.kubernetes.io/name: {{ include "agent-tasks.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "agent-tasks.image" -}}
{{ .Values.image.repository }}:{{ default .Chart.AppVersion .Values.image.tag }}
{{- end }}

{{- define "agent-tasks.secretName" -}}
{{- if .migrateSecret }}{{ .migrateSecret }}{{ else }}{{ default (include "agent-tasks.fullname" .) .Values.secrets.existingSecret }}{{ end }}
{{- end }}

{{- define "agent-tasks.dispatcherName" -}}
{{- default (include "agent-tasks.fullname" .) .Values.dispatcher.name }}
{{- end }}

{{- define "agent-tasks.serviceAccountName" -}}
{{- if .Values.dispatcher.serviceAccount.create }}
{{- default (printf "%s-dispatcher" (include "agent-tasks.fullname" .)) .Values.dispatcher.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.dispatcher.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Where agent Jobs run: a namespace of their own by default, away from the release's Secrets. */}}
{{- define "agent-tasks.agentNamespace" -}}
{{- default (printf "%s-agents" .Release.Name | trunc 63 | trimSuffix "-") .Values.dispatcher.kubernetes.namespace }}
{{- end }}

{{/* An env var from the chart's (or the existing) Secret: (dict "root" $ "name" "API_TOKEN" "optional" false). */}}
{{- define "agent-tasks.secretEnv" -}}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ include "agent-tasks.secretName" .root }}
      key: {{ .key | default .name }}
      optional: {{ .optional | default false }}
{{- end }}

{{/* Settings both roles read. */}}
{{- define "agent-tasks.commonEnv" -}}
- name: NODE_ENV
  value: production
- name: HOST
  value: 0.0.0.0
- name: DATA_DIR
  value: /data
- name: LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
- name: MIGRATIONS_RUN
  value: {{ not .Values.migrations.hook | quote }}
- name: DATABASE_POOL_SIZE
  value: {{ .Values.database.poolSize | quote }}
{{ include "agent-tasks.secretEnv" (dict "root" . "name" "REDIS_URL" "optional" true) }}
{{- if .Values.s3.endpoint }}
- name: S3_ENDPOINT
  value: {{ .Values.s3.endpoint | quote }}
- name: S3_BUCKET
  value: {{ .Values.s3.bucket | quote }}
- name: S3_REGION
  value: {{ .Values.s3.region | quote }}
{{ include "agent-tasks.secretEnv" (dict "root" . "name" "S3_ACCESS_KEY") }}
{{ include "agent-tasks.secretEnv" (dict "root" . "name" "S3_SECRET_KEY") }}
{{- end }}
{{- end }}

{{/* "true" when each role has a database credential of its own (CONTROLLER_DATABASE_URL, DISPATCHER_DATABASE_URL). */}}
{{- define "agent-tasks.databasePerRole" -}}
{{- if or .Values.database.perRole .Values.database.controllerUrl .Values.database.dispatcherUrl }}true{{ else }}false{{ end -}}
{{- end }}

{{/* DATABASE_URL of one role (dict "root" $ "role" "controller"): its own credential, or the one both share. */}}
{{- define "agent-tasks.databaseEnv" -}}
{{- $key := eq (include "agent-tasks.databasePerRole" .root) "true" | ternary (printf "%s_DATABASE_URL" (upper .role)) "DATABASE_URL" }}
{{- include "agent-tasks.secretEnv" (dict "root" .root "name" "DATABASE_URL" "key" $key) }}
{{- end }}

{{- define "agent-tasks.controllerSecretEnv" -}}
{{ include "agent-tasks.databaseEnv" (dict "root" . "role" "controller") }}
{{ include "agent-tasks.secretEnv" (dict "root" . "name" "API_TOKEN") }}
{{ include "agent-tasks.secretEnv" (dict "root" . "name" "SECRET_KEY") }}
{{ include "agent-tasks.secretEnv" (dict "root" . "name" "CALLBACK_SIGNING_KEY" "optional" true) }}
{{ include "agent-tasks.secretEnv" (dict "root" . "name" "DISPATCHER_API_KEY" "optional" true) }}
{{ include "agent-tasks.secretEnv" (dict "root" . "name" "FORGE_WEBHOOK_SECRET" "optional" true) }}
{{ include "agent-tasks.secretEnv" (dict "root" . "name" "CHAT_SIGNING_SECRET" "optional" true) }}
{{ include "agent-tasks.secretEnv" (dict "root" . "name" "CUSTOM_WEBHOOK_SECRET" "optional" true) }}
{{- end }}

{{- define "agent-tasks.dispatcherSecretEnv" -}}
{{ include "agent-tasks.databaseEnv" (dict "root" . "role" "dispatcher") }}
{{ include "agent-tasks.secretEnv" (dict "root" . "name" "API_KEY") }}
{{ include "agent-tasks.secretEnv" (dict "root" . "name" "AGENT_KEY") }}
{{ include "agent-tasks.secretEnv" (dict "root" . "name" "CALLBACK_SIGNING_KEY" "optional" true) }}
{{ include "agent-tasks.secretEnv" (dict "root" . "name" "CONTROLLER_TOKEN" "optional" true) }}
{{- end }}

{{/* Writable places on a read-only root filesystem. */}}
{{- define "agent-tasks.volumeMounts" -}}
- name: tmp
  mountPath: /tmp
- name: data
  mountPath: /data
{{- end }}

{{- define "agent-tasks.volumes" -}}
- name: tmp
  emptyDir: {}
- name: data
  emptyDir: {}
{{- end }}
