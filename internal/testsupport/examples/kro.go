package examples

import (
	"strings"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/testsupport/ocmbuild"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/ocm"
)

// Names of the kro examples: OCM's controller examples (helm-simple,
// helm-configuration-localization, kustomize-configuration-localization,
// helm-nested, chained RGDs) shipped unchanged except that charts and trees
// are local blobs instead of ghcr.io references.
const (
	KroHelm          = "example.com/kro/helm-configuration-localization"
	KroKustomize     = "example.com/kro/kustomize-configuration-localization"
	KroNested        = "example.com/kro/helm-nested"
	KroNestedChart   = "example.com/kro/helm-nested/chart"
	KroChained       = "example.com/kro/chained"
	KroRGDMediaType  = "application/vnd.cncf.kro.resourcegraphdefinition.v1+yaml"
	KroPodinfoImage  = "ghcr.io/stefanprodan/podinfo:6.9.1@sha256:262578cde928d5c9eba3bce079976444f624c13ed0afb741d90d5423877496cb"
	kroImageResource = "image-resource"
)

// KroHelmRGD is OCM's helm-configuration-localization RGD: an OCM Resource
// node per chart and image, a Flux OCIRepository + HelmRelease and an
// Argo CD Application for the same app.
const KroHelmRGD = `apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: helm-configuration-localization
spec:
  schema:
    apiVersion: v1alpha1
    kind: HelmConfigurationLocalization
    spec:
      prefix: string | default="helm-configuration-localization"
      podinfo:
        message: string | default="hello world"
        releaseName: string | default="podinfo"
        replicas: integer | default=1 minimum=1 maximum=5
  resources:
    - id: resourceChart
      template:
        apiVersion: delivery.ocm.software/v1alpha1
        kind: Resource
        metadata:
          name: "${schema.spec.prefix}-resource-chart-name"
        spec:
          componentRef:
            name: helm-configuration-localization-component
          resource:
            byReference:
              resource:
                name: helm-resource
          additionalStatusFields:
            registry: resource.access.toOCI().registry
            repository: resource.access.toOCI().repository
            digest: resource.access.toOCI().digest
            tag: resource.access.toOCI().tag
    - id: resourceImage
      template:
        apiVersion: delivery.ocm.software/v1alpha1
        kind: Resource
        metadata:
          name: "${schema.spec.prefix}-resource-image-name"
        spec:
          componentRef:
            name: helm-configuration-localization-component
          resource:
            byReference:
              resource:
                name: image-resource
          additionalStatusFields:
            registry: resource.access.toOCI().registry
            repository: resource.access.toOCI().repository
            tag: resource.access.toOCI().tag
            digest: resource.digest.value
    # Deployment using FluxCD
    - id: ocirepository
      template:
        apiVersion: source.toolkit.fluxcd.io/v1
        kind: OCIRepository
        metadata:
          name: "${schema.spec.prefix}-oci-repository-name"
        spec:
          interval: 1m0s
          insecure: true
          layerSelector:
            mediaType: "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
            operation: copy
          url: oci://${resourceChart.status.additional.registry}/${resourceChart.status.additional.repository}
          ref:
            digest: ${resourceChart.status.additional.digest}
    - id: helmrelease
      template:
        apiVersion: helm.toolkit.fluxcd.io/v2
        kind: HelmRelease
        metadata:
          name: "${schema.spec.podinfo.releaseName}"
        spec:
          releaseName: "${schema.spec.podinfo.releaseName}-flux"
          interval: 1m
          timeout: 5m
          chartRef:
            kind: OCIRepository
            name: ${ocirepository.metadata.name}
            namespace: default
          values:
            replicaCount: ${schema.spec.podinfo.replicas}
            image:
              repository: ${resourceImage.status.additional.registry}/${resourceImage.status.additional.repository}
              tag: ${resourceImage.status.additional.tag}
            ui:
              message: ${schema.spec.podinfo.message}
    # Deployment using ArgoCD
    - id: argocdApplication
      template:
        apiVersion: argoproj.io/v1alpha1
        kind: Application
        metadata:
          name: "${schema.spec.prefix}"
          namespace: argocd
          finalizers:
            - resources-finalizer.argocd.argoproj.io
        spec:
          project: default
          source:
            chart: podinfo
            helm:
              releaseName: ${schema.spec.prefix}
              valuesObject:
                replicaCount: ${schema.spec.podinfo.replicas}
                image:
                  repository: ${resourceImage.status.additional.registry}/${resourceImage.status.additional.repository}
                  tag: ${resourceImage.status.additional.tag}
                ui:
                  message: ${schema.spec.podinfo.message}
              parameters:
                - name: ui.color
                  value: "#ff0000"
            path: .
            repoURL: oci://${resourceChart.status.additional.registry}/${resourceChart.status.additional.repository}
            targetRevision: ${resourceChart.status.additional.tag}
          destination:
            server: https://kubernetes.default.svc
            namespace: default-argocd
          syncPolicy:
            automated:
              prune: true
              selfHeal: true
            syncOptions:
              - CreateNamespace=true
`

// KroKustomizeRGD is OCM's kustomize-configuration-localization RGD.
const KroKustomizeRGD = `apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: kustomize-configuration-localization
spec:
  schema:
    apiVersion: v1alpha1
    kind: KustomizeConfigurationLocalization
    spec:
      prefix: string | default="kustomize-configuration-localization"
      podinfo:
        message: string | default="hello world"
  resources:
    - id: resourceKustomization
      template:
        apiVersion: delivery.ocm.software/v1alpha1
        kind: Resource
        metadata:
          name: "${schema.spec.prefix}-resource-name"
        spec:
          componentRef:
            name: kustomize-configuration-localization-component
          resource:
            byReference:
              resource:
                name: kustomize-resource
          additionalStatusFields:
            registry: resource.access.toOCI().registry
            repository: resource.access.toOCI().repository
            digest: resource.access.toOCI().digest
    - id: resourceImage
      template:
        apiVersion: delivery.ocm.software/v1alpha1
        kind: Resource
        metadata:
          name: "${schema.spec.prefix}-resource-image-name"
        spec:
          componentRef:
            name: kustomize-configuration-localization-component
          resource:
            byReference:
              resource:
                name: image-resource
          additionalStatusFields:
            oci: resource.access.imageReference.toOCI()
    - id: ocirepository
      template:
        apiVersion: source.toolkit.fluxcd.io/v1
        kind: OCIRepository
        metadata:
          name: "${schema.spec.prefix}-oci-repository-name"
        spec:
          interval: 1m0s
          url: oci://${resourceKustomization.status.additional.registry}/${resourceKustomization.status.additional.repository}
          ref:
            digest: ${resourceKustomization.status.additional.digest}
    - id: kustomization
      template:
        apiVersion: kustomize.toolkit.fluxcd.io/v1
        kind: Kustomization
        metadata:
          name: "${schema.spec.prefix}-kustomization-name"
        spec:
          targetNamespace: flux-ns
          interval: 1m
          prune: true
          sourceRef:
            kind: OCIRepository
            name: ${ocirepository.metadata.name}
          path: "./"
          patches:
            - patch: |
                - op: replace
                  path: /spec/template/spec/containers/0/image
                  value: ${resourceImage.status.additional.oci.registry}/${resourceImage.status.additional.oci.repository}@${resourceImage.status.additional.oci.digest}
              target:
                kind: Deployment
                name: .*
            - patch: |
                - op: add
                  path: /spec/template/spec/containers/0/env/-
                  value:
                    name: PODINFO_UI_MESSAGE
                    value: ${schema.spec.podinfo.message}
              target:
                kind: Deployment
                name: .*
            - patch: |
                apiVersion: autoscaling/v2
                kind: HorizontalPodAutoscaler
                metadata:
                  name: podinfo
                $patch: delete
              target:
                kind: HorizontalPodAutoscaler
                name: .*
    - id: argocdApplication
      template:
        apiVersion: argoproj.io/v1alpha1
        kind: Application
        metadata:
          name: "${schema.spec.prefix}"
          namespace: argocd
        spec:
          project: default
          source:
            repoURL: oci://${resourceKustomization.status.additional.registry}/${resourceKustomization.status.additional.repository}
            targetRevision: ${resourceKustomization.status.additional.digest}
            path: "./"
            kustomize:
              namePrefix: argo-
              patches:
                - patch: '[{"op":"replace","path":"/spec/template/spec/containers/0/image","value":"${resourceImage.status.additional.oci.registry}/${resourceImage.status.additional.oci.repository}@${resourceImage.status.additional.oci.digest}"}]'
                  target:
                    kind: Deployment
                    name: podinfo
                - patch: '[{"op":"add","path":"/spec/template/spec/containers/0/env/-","value":{"name":"PODINFO_UI_MESSAGE","value":"${schema.spec.podinfo.message}"}}]'
                  target:
                    kind: Deployment
                    name: podinfo
                - patch: |
                    apiVersion: autoscaling/v2
                    kind: HorizontalPodAutoscaler
                    metadata:
                      name: podinfo
                    $patch: delete
                  target:
                    kind: HorizontalPodAutoscaler
                    name: podinfo
          destination:
            server: https://kubernetes.default.svc
            namespace: default-argocd
`

// KroNestedRGD is OCM's helm-nested RGD: the chart is a resource of a
// referenced component (referencePath).
const KroNestedRGD = `apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: helm-nested
spec:
  schema:
    apiVersion: v1alpha1
    kind: HelmNested
    spec:
      prefix: string | default="helm-nested"
  resources:
    - id: resourceChart
      template:
        apiVersion: delivery.ocm.software/v1alpha1
        kind: Resource
        metadata:
          name: "${schema.spec.prefix}-resource-chart-name"
        spec:
          componentRef:
            name: helm-nested-component
          resource:
            byReference:
              resource:
                name: helm-resource
              referencePath:
                - name: nested-chart
          additionalStatusFields:
            oci: resource.access.toOCI()
    - id: argocdApplication
      template:
        apiVersion: argoproj.io/v1alpha1
        kind: Application
        metadata:
          name: "${schema.spec.prefix}"
          namespace: argocd
        spec:
          project: default
          source:
            chart: podinfo
            helm:
              releaseName: ${schema.spec.prefix}
            path: .
            repoURL: oci://${resourceChart.status.additional.oci.registry}/${resourceChart.status.additional.oci.repository}
            targetRevision: ${resourceChart.status.additional.oci.tag}
          destination:
            server: https://kubernetes.default.svc
            namespace: nested
`

// KroAppRGD and KroSystemRGD are the chained RGDs of OCM's tutorial: the
// system RGD computes the image and instantiates the app RGD's kind.
const KroAppRGD = `apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: podinfo-app
spec:
  schema:
    apiVersion: v1alpha1
    kind: Podinfo
    spec:
      image: string
      message: string | default="hello"
      replicas: integer | default=1 minimum=0
  resources:
    - id: deployment
      readyWhen:
        - ${deployment.status.conditions.exists(c, c.type == "Available" && c.status == "True")}
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: ${schema.metadata.name}
          namespace: ${schema.metadata.namespace}
        spec:
          replicas: ${schema.spec.replicas}
          selector:
            matchLabels: {app: "${schema.metadata.name}"}
          template:
            metadata:
              labels: {app: "${schema.metadata.name}"}
            spec:
              containers:
                - name: podinfo
                  image: ${schema.spec.image}
                  env:
                    - {name: PODINFO_UI_MESSAGE, value: "${schema.spec.message}"}
    - id: service
      template:
        apiVersion: v1
        kind: Service
        metadata:
          name: ${deployment.metadata.name}
          namespace: ${schema.metadata.namespace}
        spec:
          selector: ${deployment.spec.selector.matchLabels}
          ports:
            - port: 9898
`

const KroSystemRGD = `apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: system
spec:
  schema:
    apiVersion: v1alpha1
    kind: System
    spec:
      message: string | default="from the system"
      replicas: integer | default=2
  resources:
    - id: image
      template:
        apiVersion: delivery.ocm.software/v1alpha1
        kind: Resource
        metadata:
          name: ${schema.metadata.name}-image
        spec:
          componentRef:
            name: system-component
          resource:
            byReference:
              resource:
                name: image-resource
          additionalStatusFields:
            oci: resource.access.toOCI()
    - id: repository
      template:
        apiVersion: delivery.ocm.software/v1alpha1
        kind: Repository
        metadata:
          name: ${schema.metadata.name}-repository
        spec:
          repositorySpec: {type: OCIRegistry, baseUrl: ghcr.io/example}
    - id: config
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: ${schema.metadata.name}-config
        data:
          image: ${image.status.additional.oci.registry + "/" + image.status.additional.oci.repository + "@" + image.status.additional.oci.digest}
    - id: app
      template:
        apiVersion: kro.run/v1alpha1
        kind: Podinfo
        metadata:
          name: ${schema.metadata.name}-podinfo
        spec:
          image: ${image.status.additional.oci.registry}/${image.status.additional.oci.repository}@${image.status.additional.oci.digest}
          message: ${schema.spec.message}
          replicas: ${schema.spec.replicas}
`

// kroKustomizeTree is the kustomize tree of OCM's example: podinfo's
// Deployment and HPA.
func kroKustomizeTree() map[string][]byte {
	return map[string][]byte{
		"kustomization.yaml": []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - deployment.yaml\n  - hpa.yaml\n"),
		"deployment.yaml": []byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: podinfo
spec:
  selector:
    matchLabels: {app: podinfo}
  template:
    metadata:
      labels: {app: podinfo}
    spec:
      containers:
        - name: podinfod
          image: ghcr.io/stefanprodan/podinfo:6.9.1
          env:
            - {name: PODINFO_UI_COLOR, value: "#34577c"}
`),
		"hpa.yaml": []byte(`apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: podinfo
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: podinfo}
  minReplicas: 2
  maxReplicas: 4
`),
	}
}

// KroDemo returns the kro example components, reading the podinfo chart
// under root (the repository's testdata/src).
func KroDemo(root string) ([]*ocmbuild.Component, error) {
	podinfoSet, _, err := chart(root, "podinfo", "6.7.0", false)
	if err != nil {
		return nil, err
	}
	tree, err := ocmbuild.TarFiles(kroKustomizeTree(), true)
	if err != nil {
		return nil, err
	}
	image := ocmbuild.Resource{Name: kroImageResource, Type: "ociImage", Version: "6.9.1",
		Access: map[string]any{"type": "ociArtifact", "imageReference": KroPodinfoImage},
		Digest: &ocm.Digest{HashAlgorithm: "SHA-256", NormalisationAlgorithm: "ociArtifactDigest/v1", Value: KroPodinfoImage[strings.LastIndex(KroPodinfoImage, ":")+1:]}}
	rgd := func(name, text, mediaType string) ocmbuild.Resource {
		return ocmbuild.Resource{Name: name, Type: "blob", Version: "1.0.0", Data: []byte(text), MediaType: mediaType}
	}
	chartRes := ocmbuild.Resource{Name: "helm-resource", Type: "helmChart", Version: "6.7.0", Data: podinfoSet, MediaType: ocmbuild.MediaTypeArtifactSet}
	return []*ocmbuild.Component{
		{Name: KroHelm, Version: "1.0.0", Provider: "ocm.software",
			Resources: []ocmbuild.Resource{chartRes, image, rgd("kro-rgd", KroHelmRGD, ocmbuild.MediaTypeYAML)}},
		{Name: KroKustomize, Version: "1.0.0", Provider: "ocm.software",
			Resources: []ocmbuild.Resource{
				{Name: "kustomize-resource", Type: "directoryTree", Version: "1.0.0", Data: tree, MediaType: ocmbuild.MediaTypeTgz},
				image, rgd("kro-rgd", KroKustomizeRGD, KroRGDMediaType)}},
		{Name: KroNestedChart, Version: "1.0.0", Provider: "ocm.software", Resources: []ocmbuild.Resource{chartRes}},
		{Name: KroNested, Version: "1.0.0", Provider: "ocm.software",
			References: []ocmbuild.Reference{{Name: "nested-chart", ComponentName: KroNestedChart, Version: "1.0.0"}},
			Resources:  []ocmbuild.Resource{rgd("kro-rgd", KroNestedRGD, ocmbuild.MediaTypeYAML)}},
		{Name: KroChained, Version: "1.0.0", Provider: "ocm.software",
			Resources: []ocmbuild.Resource{image, rgd("app-rgd", KroAppRGD, KroRGDMediaType), rgd("system-rgd", KroSystemRGD, ocmbuild.MediaTypeYAML)}},
	}, nil
}
