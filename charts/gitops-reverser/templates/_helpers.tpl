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

{{/* repository:tag, or repository@sha256:... when image.digest is set (the tag is then only
informative and left out, so the digest alone decides). */}}
{{- define "gr.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{/* The Secret and key holding the Redis URL of an external Redis. */}}
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

{{/* The Secret holding the built-in Redis's password: the user's, or the one the Redis pod's
init container creates in the cluster when missing (never rendered: docs/install.md). */}}
{{- define "gr.redisAuthSecret" -}}
{{- if .Values.redis.auth.existingSecret -}}
{{ .Values.redis.auth.existingSecret }}
{{- else -}}
{{ include "gr.fullname" . }}-redis
{{- end -}}
{{- end -}}

{{/* The environment giving a container the Redis URL as variable `name`: (dict "root" $
"name" "GITOPS_REVERSER_REDIS_URL"). The built-in Redis's URL is spelt around
$(REDIS_PASSWORD), which Kubernetes expands from the Secret: no password is rendered. */}}
{{- define "gr.redisEnv" -}}
{{- $root := .root -}}
{{- if $root.Values.redis.builtin -}}
- name: REDIS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ include "gr.redisAuthSecret" $root }}
      key: {{ $root.Values.redis.auth.existingSecretKey }}
- name: {{ .name }}
  value: {{ printf "redis://:$(REDIS_PASSWORD)@%s-redis.%s.svc:6379/0" (include "gr.fullname" $root) $root.Release.Namespace | quote }}
{{- else if $root.Values.redis.sentinel.hosts -}}
{{- $sentinel := $root.Values.redis.sentinel -}}
{{- $auth := "" -}}
{{- if $sentinel.existingSecret.name -}}
{{- $auth = ":$(REDIS_PASSWORD)@" }}
- name: REDIS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $sentinel.existingSecret.name }}
      key: {{ $sentinel.existingSecret.key }}
{{ end -}}
{{- $query := "" -}}
{{- if and $sentinel.existingSecret.name $sentinel.passwordForSentinels (ne .name "RQ_DASHBOARD_REDIS_URL") -}}
{{- $query = "?sentinel_password=$(REDIS_PASSWORD)" -}}
{{- end }}
- name: {{ .name }}
  value: {{ printf "%s://%s%s/%s/%v%s" (ternary "rediss+sentinel" "redis+sentinel" $sentinel.tls) $auth (join "," $sentinel.hosts) $sentinel.service $sentinel.db $query | quote }}
{{- else -}}
- name: {{ .name }}
  valueFrom:
    secretKeyRef:
      name: {{ include "gr.redisSecretName" $root }}
      key: {{ include "gr.redisSecretKey" $root }}
{{- end -}}
{{- end -}}

{{/* Fails the render when no Redis is configured at all, or more than one way. */}}
{{- define "gr.checkRedis" -}}
{{- $ways := 0 -}}
{{- if .Values.redis.builtin }}{{ $ways = add1 $ways }}{{ end -}}
{{- if .Values.redis.url }}{{ $ways = add1 $ways }}{{ end -}}
{{- if .Values.redis.existingSecret.name }}{{ $ways = add1 $ways }}{{ end -}}
{{- if .Values.redis.sentinel.hosts }}{{ $ways = add1 $ways }}{{ end -}}
{{- if eq $ways 0 -}}
{{- fail "no Redis: set redis.builtin=true, redis.url, redis.existingSecret.name or redis.sentinel.hosts" -}}
{{- end -}}
{{- if gt $ways 1 -}}
{{- fail "Redis is configured more than one way: choose one of redis.builtin=true, redis.url, redis.existingSecret.name, redis.sentinel.hosts" -}}
{{- end -}}
{{- if and .Values.redis.sentinel.hosts .Values.redis.sentinel.tls .Values.dashboard.enabled -}}
{{- fail "dashboard.enabled with redis.sentinel.tls: rq-dashboard cannot reach a Sentinel set over TLS" -}}
{{- end -}}
{{- if and .Values.redis.sentinel.hosts (not .Values.redis.sentinel.service) -}}
{{- fail "redis.sentinel.service must name the primary the sentinels monitor" -}}
{{- end -}}
{{- if and .Values.redis.url (not (or (hasPrefix "redis://" .Values.redis.url) (hasPrefix "rediss://" .Values.redis.url))) -}}
{{- fail "redis.url must start with redis:// or rediss://" -}}
{{- end -}}
{{- end -}}

{{/* The environment of a product container: (dict "root" $ "settings" .Values.watcher.settings "metricsPort" 9090) */}}
{{- define "gr.env" -}}
{{ include "gr.redisEnv" (dict "root" .root "name" "GITOPS_REVERSER_REDIS_URL") }}
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

{{/*
Pod-level settings, the global values under the component's own: (dict "root" $ "values"
.Values.watcher "component" "watcher"). nodeSelector maps are merged (the component's key wins),
tolerations joined (global first); priorityClassName, affinity and topologySpreadConstraints
are the component's when it sets them, else the global ones. A spread constraint without a
labelSelector gets the pod's own selector labels (one without any selects nothing).
*/}}
{{- define "gr.scheduling" -}}
{{- $g := .root.Values -}}
{{- $v := .values -}}
{{- with ($v.priorityClassName | default $g.priorityClassName) }}
priorityClassName: {{ . | quote }}
{{- end }}
{{- with (merge (dict) ($v.nodeSelector | default dict) ($g.nodeSelector | default dict)) }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with (concat ($g.tolerations | default list) ($v.tolerations | default list)) }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with ($v.affinity | default $g.affinity) }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with ($v.topologySpreadConstraints | default $g.topologySpreadConstraints) }}
{{- $own := dict "labelSelector" (dict "matchLabels" (include "gr.selector" $ | fromYaml)) }}
topologySpreadConstraints:
{{- range . }}
  - {{- toYaml (merge (dict) . $own) | nindent 4 }}
{{- end }}
{{- end }}
{{- end -}}

{{/* A pod's labels: its selector labels, then podLabels (global under the component's); a
podLabels key never replaces a selector label. (dict "root" $ "values" ... "component" ...) */}}
{{- define "gr.podLabels" -}}
{{- $selector := include "gr.selector" . | fromYaml -}}
{{- $labels := merge $selector (.values.podLabels | default dict) (.root.Values.podLabels | default dict) -}}
{{- toYaml $labels -}}
{{- end -}}

{{/* A pod's annotations (the component's podAnnotations) under the chart's own: (dict "own" (dict ...) "values" ...) */}}
{{- define "gr.podAnnotations" -}}
{{- $annotations := merge (.own | default dict) (.values.podAnnotations | default dict) -}}
{{- with $annotations }}
{{- toYaml . -}}
{{- end -}}
{{- end -}}

{{/* extraEnv, extraVolumes or extraVolumeMounts of a product container, the global list first:
(dict "root" $ "values" ... "key" "extraEnv") */}}
{{- define "gr.extra" -}}
{{- with (concat (index .root.Values .key | default list) (index .values .key | default list)) }}
{{- toYaml . -}}
{{- end -}}
{{- end -}}

{{- define "gr.serviceAccountName" -}}
{{ include "gr.fullname" .root }}-{{ .component }}
{{- end -}}

{{/* Redis's containers (the init container too, so the file it writes is Redis's own). */}}
{{- define "gr.redisSecurityContext" -}}
runAsNonRoot: true
runAsUser: 999
runAsGroup: 999
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities: {drop: [ALL]}
seccompProfile: {type: RuntimeDefault}
{{- end -}}

{{/* A ServiceAccount's annotations: serviceAccount.annotations, the component's over the
global ones. (dict "root" $ "values" ...) */}}
{{- define "gr.serviceAccountAnnotations" -}}
{{- $own := (.values.serviceAccount | default dict).annotations | default dict -}}
{{- with merge (dict) $own (.root.Values.serviceAccount.annotations | default dict) }}
{{- toYaml . -}}
{{- end -}}
{{- end -}}
