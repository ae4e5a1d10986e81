package generator

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// AnnotationRefresh is the annotation Argo CD's ApplicationSet controller
// acts on at once (and removes): what its own webhook handler sets.
const AnnotationRefresh = "argocd.argoproj.io/application-set-refresh"

var appSetGVR = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applicationsets"}

// KubeAppSets lists and refreshes ApplicationSets through the Kubernetes
// API: list and patch on applicationsets.argoproj.io in Namespaces, nothing
// else (manifests/generator's Role).
type KubeAppSets struct {
	Client dynamic.Interface
	// Namespaces to list (Argo CD's, and those of
	// applicationsetcontroller.namespaces).
	Namespaces []string
	// ConfigMap is the name plugin generators reference (configMapRef) to
	// ask this generator.
	ConfigMap string
}

// NewKubeAppSets connects with kubeconfig, or in the cluster (the pod's
// service account) when it is "".
func NewKubeAppSets(kubeconfig string, namespaces []string, configMap string) (*KubeAppSets, error) {
	var cfg *rest.Config
	var err error
	if kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", kubeconfig)
	} else {
		cfg, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, fmt.Errorf("kubernetes API: %w", err)
	}
	cfg.UserAgent = "argocd-ocm-plugin-generator"
	c, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes API: %w", err)
	}
	return &KubeAppSets{Client: c, Namespaces: namespaces, ConfigMap: configMap}, nil
}

// List returns the ApplicationSets with a plugin generator that references
// k.ConfigMap, with those generators' input parameters.
func (k *KubeAppSets) List(ctx context.Context) ([]AppSet, error) {
	var out []AppSet
	for _, ns := range k.Namespaces {
		l, err := k.Client.Resource(appSetGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing ApplicationSets in %s: %w", ns, err)
		}
		for _, u := range l.Items {
			spec, _ := u.Object["spec"].(map[string]any)
			gens, _ := spec["generators"].([]any)
			var inputs []map[string]any
			pluginInputs(gens, k.ConfigMap, 0, &inputs)
			if len(inputs) > 0 {
				out = append(out, AppSet{Namespace: u.GetNamespace(), Name: u.GetName(), Inputs: inputs})
			}
		}
	}
	return out, nil
}

// pluginInputs collects the input parameters of plugin generators that
// reference configMap, in matrix and merge generators too (Argo CD nests
// them at most two levels; depth bounds a hostile spec).
func pluginInputs(gens []any, configMap string, depth int, out *[]map[string]any) {
	if depth > 3 {
		return
	}
	for _, g := range gens {
		m, _ := g.(map[string]any)
		if p, ok := m["plugin"].(map[string]any); ok {
			ref, _ := p["configMapRef"].(map[string]any)
			if name, _ := ref["name"].(string); name == configMap {
				in, _ := p["input"].(map[string]any)
				params, _ := in["parameters"].(map[string]any)
				if params != nil {
					*out = append(*out, params)
				}
			}
		}
		for _, nest := range []string{"matrix", "merge"} {
			if n, ok := m[nest].(map[string]any); ok {
				sub, _ := n["generators"].([]any)
				pluginInputs(sub, configMap, depth+1, out)
			}
		}
	}
}

// Refresh sets AnnotationRefresh on the ApplicationSet (a merge patch of
// that annotation only).
func (k *KubeAppSets) Refresh(ctx context.Context, namespace, name string) error {
	patch := []byte(`{"metadata":{"annotations":{"` + AnnotationRefresh + `":"true"}}}`)
	_, err := k.Client.Resource(appSetGVR).Namespace(namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}
