{{/* The chart name, overridable. */}}
{{- define "@@name@@.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The full name of every resource: release name + chart name, unless one contains the other. */}}
{{- define "@@name@@.fullname" -}}
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

{{/* chart-version, for the helm.sh/chart label. */}}
{{- define "@@name@@.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels that select the operator pods; never change them after a release exists. */}}
{{- define "@@name@@.selectorLabels" -}}
app.kubernetes.io/name: {{ include "@@name@@.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Labels of every resource. */}}
{{- define "@@name@@.labels" -}}
helm.sh/chart: {{ include "@@name@@.chart" . }}
{{ include "@@name@@.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: controller
app.kubernetes.io/part-of: kubeward
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The ServiceAccount the operator runs as. */}}
{{- define "@@name@@.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "@@name@@.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The image reference: repository, then @digest or :tag (appVersion by default). */}}
{{- define "@@name@@.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* The name of the leader-election Lease. */}}
{{- define "@@name@@.leaderElectionId" -}}
{{- default (include "@@name@@.fullname" .) .Values.leaderElection.id }}
{{- end }}

{{/* True (non-empty) when the ServiceMonitor is wanted and the cluster serves its API. */}}
{{- define "@@name@@.serviceMonitorServed" -}}
{{- if and .Values.metrics.enabled .Values.metrics.serviceMonitor.enabled (.Capabilities.APIVersions.Has "monitoring.coreos.com/v1/ServiceMonitor") }}true{{ end }}
{{- end }}

{{/* The webhook Service, which the API server calls. */}}
{{- define "@@name@@.webhookService" -}}
{{- printf "%s-webhook" (include "@@name@@.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The cert-manager Certificate of the webhook server, and the Secret it fills. */}}
{{- define "@@name@@.webhookCertificate" -}}
{{- printf "%s-webhook-cert" (include "@@name@@.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Where the webhook serving certificate is mounted (`--webhook-cert-dir`). */}}
{{- define "@@name@@.webhookCertDir" -}}
/tmp/k8s-webhook-server/serving-certs
{{- end }}

{{/* The `cert-manager.io/inject-ca-from` value: the Certificate, as namespace/name. */}}
{{- define "@@name@@.injectCaFrom" -}}
{{- printf "%s/%s" .Release.Namespace (include "@@name@@.webhookCertificate" .) }}
{{- end }}

{{/* True (non-empty) when cert-manager issues the webhook certificate. */}}
{{- define "@@name@@.certManager" -}}
{{- if and .Values.webhooks.enabled .Values.webhooks.certManager.enabled }}true{{ end }}
{{- end }}

{{/*
  The webhook configurations of files/webhooks.yaml (YAML documents as the operator's
  `manifests` subcommand writes them), as a list under `items`.
*/}}
{{- define "@@name@@.webhookConfigurations" -}}
{{- $items := list }}
{{- range $doc := splitList "\n---" (.Files.Get "files/webhooks.yaml") }}
{{- $object := $doc | fromYaml }}
{{- if hasKey $object "Error" }}
{{- fail (printf "files/webhooks.yaml does not parse: %s" $object.Error) }}
{{- end }}
{{- if $object.kind }}
{{- $items = append $items $object }}
{{- end }}
{{- end }}
{{- toYaml (dict "items" $items) }}
{{- end }}

{{/*
  The operator's rules of files/rbac-rules.yaml (written by its `manifests` subcommand), as a
  map with a non-empty `rules` list: one source for the ClusterRole and the per-namespace Roles.
*/}}
{{- define "@@name@@.rbacRules" -}}
{{- $rules := .Files.Get "files/rbac-rules.yaml" | fromYaml }}
{{- if or (hasKey $rules "Error") (not $rules.rules) }}
{{- fail "files/rbac-rules.yaml must be a YAML map with a non-empty `rules` list" }}
{{- end }}
{{- toYaml $rules }}
{{- end }}
