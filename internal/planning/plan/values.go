package plan

import (
	"fmt"

	commonutil "helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/strvals"
	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/render/manifests"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/util/nesting"
)

// HelmValues layers the input's values as helm does: files in order (each
// read with read, once and in order), then inline values, then
// --set-json, --set, --set-string and --set-file (Helm's order,
// pkg/cli/values.Options.MergeValues). Maps merge deeply, everything else
// is replaced.
func HelmValues(in Input, read func(name string) ([]byte, error)) (map[string]any, error) {
	base := map[string]any{}
	for _, f := range in.ValueFiles {
		b, err := read(f)
		if err != nil {
			return nil, err
		}
		cur := map[string]any{}
		if err := yaml.Unmarshal(b, &cur); err != nil {
			return nil, fmt.Errorf("%w: values file %s: %v", errdef.ErrInvalidInput, f, err)
		}
		if err := nesting.Check(cur); err != nil {
			return nil, fmt.Errorf("%w: values file %s: %w", errdef.ErrInvalidInput, f, err)
		}
		base = commonutil.MergeTables(cur, base)
	}
	if in.Values != nil {
		if err := nesting.Check(in.Values); err != nil {
			return nil, fmt.Errorf("%w: values: %w", errdef.ErrInvalidInput, err)
		}
		base = commonutil.MergeTables(manifests.DeepCopy(in.Values), base)
	}
	for _, s := range in.SetJSON {
		if err := strvals.ParseJSON(s, base); err != nil {
			return nil, fmt.Errorf("%w: --set-json %s: %v", errdef.ErrInvalidInput, errdef.Quote(s), err)
		}
	}
	for _, s := range in.Set {
		if err := strvals.ParseInto(s, base); err != nil {
			return nil, fmt.Errorf("%w: --set %s: %v", errdef.ErrInvalidInput, s, err)
		}
	}
	for _, s := range in.SetString {
		if err := strvals.ParseIntoString(s, base); err != nil {
			return nil, fmt.Errorf("%w: --set-string %s: %v", errdef.ErrInvalidInput, errdef.Quote(s), err)
		}
	}
	for _, s := range in.SetFile {
		var readErr error
		reader := func(rs []rune) (any, error) {
			b, err := in.ReadSetFile(string(rs))
			if err != nil {
				// Kept apart: strvals would add nothing but its own wording.
				readErr = err
				return nil, err
			}
			return string(b), nil
		}
		if err := strvals.ParseIntoFile(s, base, reader); err != nil {
			if readErr != nil {
				return nil, fmt.Errorf("--set-file %s: %w", errdef.Quote(s), readErr)
			}
			return nil, fmt.Errorf("%w: --set-file %s: %v", errdef.ErrInvalidInput, errdef.Quote(s), err)
		}
	}
	if len(in.SetJSON)+len(in.Set)+len(in.SetString)+len(in.SetFile) > 0 {
		if err := nesting.Check(base); err != nil {
			return nil, fmt.Errorf("%w: values (--set, --set-json, --set-string, --set-file): %w", errdef.ErrInvalidInput, err)
		}
	}
	return base, nil
}
