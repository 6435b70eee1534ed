{{/*
One Deployment of a product process. Arguments (dict):
  root: $; component: watcher|branch-worker|dispatcher|receiver; values: the component's values;
  command: the console script; port: the port of /healthz, /readyz and /metrics;
  metricsPort: that port again when it is GITOPS_REVERSER_METRICS_PORT (0 for the receiver);
  extraEnv, extraMounts, extraVolumes: YAML lists (strings) for the component's own needs;
  the user's extraEnv, extraVolumeMounts and extraVolumes (global, then the component's) follow.
*/}}
{{- define "gr.deployment" -}}
{{- $root := .root -}}
{{- $v := .values -}}
{{- $pod := dict "root" $root "values" $v "component" .component -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "gr.fullname" $root }}-{{ .component }}
  namespace: {{ $root.Release.Namespace }}
  labels:
    {{- include "gr.componentLabels" (dict "root" $root "component" .component) | nindent 4 }}
spec:
  {{- if not .noReplicas }}
  replicas: {{ $v.replicas }}
  {{- end }}
  selector:
    matchLabels:
      {{- include "gr.selector" (dict "root" $root "component" .component) | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "gr.podLabels" $pod | nindent 8 }}
      annotations:
        {{- $checksum := include (print $root.Template.BasePath "/settings.yaml") $root | sha256sum }}
        {{- include "gr.podAnnotations" (dict "own" (dict "checksum/settings" $checksum) "values" $v) | nindent 8 }}
    spec:
      serviceAccountName: {{ include "gr.serviceAccountName" (dict "root" $root "component" .component) }}
      automountServiceAccountToken: true
      {{- with $root.Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      securityContext:
        {{- toYaml $root.Values.podSecurityContext | nindent 8 }}
      terminationGracePeriodSeconds: {{ .grace | default 30 }}
      {{- include "gr.scheduling" $pod | nindent 6 }}
      containers:
        - name: {{ .component }}
          image: {{ include "gr.image" $root }}
          imagePullPolicy: {{ $root.Values.image.pullPolicy }}
          command: [{{ .command | quote }}]
          ports:
            - name: {{ .portName | default "metrics" }}
              containerPort: {{ .port }}
              protocol: TCP
          envFrom:
            {{- include "gr.envFrom" $root | nindent 12 }}
          env:
            {{- include "gr.env" (dict "root" $root "settings" $v.settings "metricsPort" .metricsPort) | nindent 12 }}
            {{- with .extraEnv }}
            {{- . | nindent 12 }}
            {{- end }}
            {{- with include "gr.extra" (dict "root" $root "values" $v "key" "extraEnv") }}
            {{- . | nindent 12 }}
            {{- end }}
          {{- include "gr.probes" (.portName | default "metrics") | nindent 10 }}
          resources:
            {{- toYaml $v.resources | nindent 12 }}
          securityContext:
            {{- toYaml $root.Values.securityContext | nindent 12 }}
          volumeMounts:
            - name: tmp
              mountPath: /tmp
            {{- with .extraMounts }}
            {{- . | nindent 12 }}
            {{- end }}
            {{- with include "gr.extra" (dict "root" $root "values" $v "key" "extraVolumeMounts") }}
            {{- . | nindent 12 }}
            {{- end }}
      volumes:
        - name: tmp
          emptyDir:
            sizeLimit: 256Mi
        {{- with .extraVolumes }}
        {{- . | nindent 8 }}
        {{- end }}
        {{- with include "gr.extra" (dict "root" $root "values" $v "key" "extraVolumes") }}
        {{- . | nindent 8 }}
        {{- end }}
{{- end -}}
