{{/* Labels every object of the release carries. */}}
{{- define "grove.labels" -}}
app.kubernetes.io/part-of: grove
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* <imageRegistry>/<repository>:<tag>, the tag defaulting to the chart's appVersion. */}}
{{- define "grove.image" -}}
{{- $registry := .root.Values.imageRegistry | trimSuffix "/" -}}
{{- $tag := .image.tag | default .root.Chart.AppVersion -}}
{{- if $registry -}}
{{- printf "%s/%s:%s" $registry .image.repository $tag -}}
{{- else -}}
{{- printf "%s:%s" .image.repository $tag -}}
{{- end -}}
{{- end -}}

{{- define "grove.operatorImage" -}}
{{- include "grove.image" (dict "root" . "image" .Values.image) -}}
{{- end -}}

{{- define "grove.schedulerImage" -}}
{{- include "grove.image" (dict "root" . "image" .Values.scheduler.image) -}}
{{- end -}}

{{/* The OperatorConfiguration: values.config plus what the release decides. */}}
{{- define "grove.operatorConfig" -}}
{{- $cfg := deepCopy .Values.config -}}
{{- $_ := set $cfg "apiVersion" "operator.config.grove.io/v1alpha1" -}}
{{- $_ = set $cfg "kind" "OperatorConfiguration" -}}
{{- $_ = set $cfg.leaderElection "resourceNamespace" .Release.Namespace -}}
{{- $_ = set $cfg.server.webhooks "serviceName" .Values.service.name -}}
{{- $_ = set $cfg.server.webhooks "namespace" .Release.Namespace -}}
{{- $_ = set $cfg "startupWaiter" (dict "image" (include "grove.operatorImage" .)) -}}
{{- toYaml $cfg -}}
{{- end -}}

{{/* The KubeSchedulerConfiguration of grove-scheduler. */}}
{{- define "grove.schedulerConfig" -}}
{{- $cfg := deepCopy .Values.scheduler.config -}}
{{- $_ := set $cfg "apiVersion" "kubescheduler.config.k8s.io/v1" -}}
{{- $_ = set $cfg "kind" "KubeSchedulerConfiguration" -}}
{{- $_ = set $cfg.leaderElection "resourceNamespace" .Release.Namespace -}}
{{- toYaml $cfg -}}
{{- end -}}

{{- define "grove.imagePullSecrets" -}}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
{{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
