package pipeline

import (
	"fmt"
	"io"
	"os"

	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/strvals"
	"sigs.k8s.io/yaml"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/render/manifests"
)

// HelmValues layers the request's values as helm does: files in order, then
// inline values, then --set. Maps merge deeply, everything else is replaced.
func HelmValues(req Request) (map[string]any, error) {
	base := map[string]any{}
	for _, f := range req.ValueFiles {
		b, err := readFile(req.File(f))
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

// MaxUserFileSize bounds a values, definition or platform config file.
const MaxUserFileSize = 4 << 20

// ReadUserFile reads a file the user named (values, definition, platform
// config): a regular file of at most MaxUserFileSize bytes whose YAML
// structure stays within manifests.MaxDocumentNodes (a dense 4 MiB document
// would cost hundreds of MiB to decode). /dev/zero, FIFOs and the like are refused.
func ReadUserFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a regular file", errdef.ErrInvalidInput, name)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxUserFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxUserFileSize {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes: %w", errdef.ErrInvalidInput, name, MaxUserFileSize, errdef.ErrLimitExceeded)
	}
	if n := manifests.StructureCount(b); n > manifests.MaxDocumentNodes {
		return nil, fmt.Errorf("%w: %s has %d structural characters, more than %d: %w", errdef.ErrInvalidInput, name, n, manifests.MaxDocumentNodes, errdef.ErrLimitExceeded)
	}
	return b, nil
}

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
