package pipeline

import (
	"fmt"

	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/strvals"
	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/errdef"
)

// HelmValues layers the request's values as helm does: files in order, then
// inline values, then --set. Maps merge deeply, everything else is replaced.
func HelmValues(req Request) (map[string]any, error) {
	base := map[string]any{}
	for _, f := range req.ValueFiles {
		b, err := readFile(f)
		if err != nil {
			return nil, fmt.Errorf("%w: values file %s: %v", errdef.ErrInvalidInput, f, err)
		}
		cur := map[string]any{}
		if err := yaml.Unmarshal(b, &cur); err != nil {
			return nil, fmt.Errorf("%w: values file %s: %v", errdef.ErrInvalidInput, f, err)
		}
		base = chartutil.MergeTables(cur, base)
	}
	if req.Values != nil {
		base = chartutil.MergeTables(deepCopy(req.Values), base)
	}
	for _, s := range req.Set {
		if err := strvals.ParseInto(s, base); err != nil {
			return nil, fmt.Errorf("%w: --set %s: %v", errdef.ErrInvalidInput, s, err)
		}
	}
	return base, nil
}

func yamlMarshal(v any) ([]byte, error) { return yaml.Marshal(v) }

func deepCopy(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if mm, ok := v.(map[string]any); ok {
			v = deepCopy(mm)
		}
		out[k] = v
	}
	return out
}
