{{/* The chart's name, overridable with nameOverride. */}}
{{- define "scheduler.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The release's full name: the release name alone when it already contains the
chart's name, so "helm install scheduler" names objects "scheduler", not
"scheduler-scheduler". Truncated to leave room for suffixes like "-etcd-12".
*/}}
{{- define "scheduler.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 48 | trimSuffix "-" }}
{{- else if contains (include "scheduler.name" .) .Release.Name }}
{{- .Release.Name | trunc 48 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name (include "scheduler.name" .) | trunc 48 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "scheduler.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "scheduler.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Selects the scheduler's pods; never changes within a release. */}}
{{- define "scheduler.selectorLabels" -}}
app.kubernetes.io/name: {{ include "scheduler.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "scheduler.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "scheduler.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "scheduler.etcdName" -}}
{{- printf "%s-etcd" (include "scheduler.fullname" .) }}
{{- end }}

{{/* Selects the bundled etcd's pods; a different name from the scheduler's. */}}
{{- define "scheduler.etcdSelectorLabels" -}}
app.kubernetes.io/name: etcd
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "scheduler.etcdLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "scheduler.etcdSelectorLabels" . }}
app.kubernetes.io/part-of: {{ include "scheduler.fullname" . }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "scheduler.tokenSecretName" -}}
{{- default (printf "%s-token" (include "scheduler.fullname" .)) .Values.apiToken.existingSecret }}
{{- end }}

{{/* Where the token Secret is mounted; api.token_file points into it. */}}
{{- define "scheduler.tokenDir" -}}/etc/scheduler-token{{- end }}

{{/* Where the scoped tokens' Secrets are mounted, one file a token. */}}
{{- define "scheduler.scopedTokenDir" -}}/etc/scheduler-tokens{{- end }}

{{/*
The etcd endpoints the scheduler dials: the values' endpoints, or every member
of the bundled StatefulSet by its stable DNS name. Exactly one source, so a
release never half-uses the bundled etcd. Rendered as a JSON list.
*/}}
{{- define "scheduler.etcdEndpoints" -}}
{{- $bundled := .Values.etcd.bundled.enabled }}
{{- if and $bundled .Values.etcd.endpoints }}
{{- fail "etcd: set etcd.endpoints or etcd.bundled.enabled, not both" }}
{{- end }}
{{- if not (or $bundled .Values.etcd.endpoints) }}
{{- fail "etcd: set etcd.endpoints, or etcd.bundled.enabled=true; without either every replica would start its own embedded etcd" }}
{{- end }}
{{- if .Values.config.cluster.etcd.endpoints }}
{{- fail "config.cluster.etcd.endpoints: set etcd.endpoints instead; the chart writes this key" }}
{{- end }}
{{- if $bundled }}
{{- $name := include "scheduler.etcdName" . }}
{{- $eps := list }}
{{- range $i := until (int .Values.etcd.bundled.replicas) }}
{{- $eps = append $eps (printf "http://%s-%d.%s.%s.svc:2379" $name $i $name $.Release.Namespace) }}
{{- end }}
{{- toJson $eps }}
{{- else }}
{{- toJson .Values.etcd.endpoints }}
{{- end }}
{{- end }}

{{/*
The config file: the values' config with the keys the chart owns filled in.
api.listen binds every interface on .Values.port so the kubelet's probes and
the Service reach it.
*/}}
{{- define "scheduler.config" -}}
{{- $cfg := deepCopy .Values.config }}
{{- $api := default (dict) $cfg.api }}
{{- if $api.listen }}
{{- fail "config.api.listen: set port instead; the chart writes this key" }}
{{- end }}
{{- $_ := set $api "listen" (printf "0.0.0.0:%d" (int .Values.port)) }}
{{- if .Values.apiToken.enabled }}
{{- $_ := set $api "token_file" (printf "%s/token" (include "scheduler.tokenDir" .)) }}
{{- else if $api.token_file }}
{{- fail "config.api.token_file: set apiToken instead; the chart writes this key" }}
{{- end }}
{{- if .Values.scopedTokens }}
{{- if $api.tokens }}
{{- fail "config.api.tokens: set scopedTokens instead; the chart writes this key" }}
{{- end }}
{{- $tokens := list }}
{{- range .Values.scopedTokens }}
{{- $tokens = append $tokens (dict "name" .name "file" (printf "%s/%s" (include "scheduler.scopedTokenDir" $) .name) "teams" .teams "allow" .allow) }}
{{- end }}
{{- $_ := set $api "tokens" $tokens }}
{{- end }}
{{- $_ := set $cfg "api" $api }}
{{- if .Values.teams }}
{{- $_ := set $cfg "include" (list "teams/*.yaml") }}
{{- end }}
{{- $cluster := default (dict) $cfg.cluster }}
{{- $etcd := default (dict) $cluster.etcd }}
{{- $_ := set $etcd "endpoints" (include "scheduler.etcdEndpoints" . | fromJsonArray) }}
{{- $_ := set $cluster "etcd" $etcd }}
{{- $_ := set $cfg "cluster" $cluster }}
{{- toYaml $cfg }}
{{- end }}
