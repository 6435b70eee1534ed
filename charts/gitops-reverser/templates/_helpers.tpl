{{/* Names, labels and the pieces every Deployment shares. */}}

{{- define "gr.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "gr.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "gr.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/name: {{ include "gr.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* Selector labels of one component: (dict "root" $ "component" "watcher") */}}
{{- define "gr.selector" -}}
app.kubernetes.io/name: {{ include "gr.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "gr.componentLabels" -}}
{{ include "gr.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "gr.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* The Secret and key holding the Redis URL, whichever way Redis is configured. */}}
{{- define "gr.redisSecretName" -}}
{{- if .Values.redis.existingSecret.name -}}
{{ .Values.redis.existingSecret.name }}
{{- else -}}
{{ include "gr.fullname" . }}-redis
{{- end -}}
{{- end -}}

{{- define "gr.redisSecretKey" -}}
{{- if .Values.redis.existingSecret.name -}}
{{ .Values.redis.existingSecret.key }}
{{- else -}}
url
{{- end -}}
{{- end -}}

{{/* Fails the render when no Redis is configured at all, or more than one way. */}}
{{- define "gr.checkRedis" -}}
{{- $ways := 0 -}}
{{- if .Values.redis.builtin }}{{ $ways = add1 $ways }}{{ end -}}
{{- if .Values.redis.url }}{{ $ways = add1 $ways }}{{ end -}}
{{- if .Values.redis.existingSecret.name }}{{ $ways = add1 $ways }}{{ end -}}
{{- if eq $ways 0 -}}
{{- fail "no Redis: set redis.builtin=true, redis.url, or redis.existingSecret.name" -}}
{{- end -}}
{{- if gt $ways 1 -}}
{{- fail "Redis is configured more than one way: choose one of redis.builtin=true, redis.url, redis.existingSecret.name" -}}
{{- end -}}
{{- if and .Values.redis.url (not (or (hasPrefix "redis://" .Values.redis.url) (hasPrefix "rediss://" .Values.redis.url))) -}}
{{- fail "redis.url must start with redis:// or rediss://" -}}
{{- end -}}
{{- end -}}

{{/* The environment of a product container: (dict "root" $ "settings" .Values.watcher.settings "metricsPort" 9090) */}}
{{- define "gr.env" -}}
- name: GITOPS_REVERSER_REDIS_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "gr.redisSecretName" .root }}
      key: {{ include "gr.redisSecretKey" .root }}
- name: GITOPS_REVERSER_NAMESPACE
  valueFrom:
    fieldRef:
      fieldPath: metadata.namespace
{{- if .metricsPort }}
- name: GITOPS_REVERSER_METRICS_PORT
  value: {{ .metricsPort | quote }}
{{- end }}
{{- range $name, $value := .settings }}
- name: GITOPS_REVERSER_{{ upper $name }}
  value: {{ $value | toString | quote }}
{{- end }}
{{- end -}}

{{- define "gr.envFrom" -}}
- configMapRef:
    name: {{ include "gr.fullname" . }}-settings
{{- end -}}

{{/* Liveness (/healthz) and readiness (/readyz) on a named port. */}}
{{- define "gr.probes" -}}
livenessProbe:
  httpGet: {path: /healthz, port: {{ . }}}
  periodSeconds: 10
  timeoutSeconds: 3
  failureThreshold: 3
readinessProbe:
  httpGet: {path: /readyz, port: {{ . }}}
  periodSeconds: 5
  timeoutSeconds: 3
  failureThreshold: 2
startupProbe:
  httpGet: {path: /healthz, port: {{ . }}}
  periodSeconds: 2
  failureThreshold: 30
{{- end -}}

{{/* Pod-level scheduling: (the component's values) */}}
{{- define "gr.scheduling" -}}
{{- with .nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{- define "gr.serviceAccountName" -}}
{{ include "gr.fullname" .root }}-{{ .component }}
{{- end -}}
