package helm

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/plugin/errdef"
)

// schemaURL is the URL Helm gives every values.schema.json when it compiles it
// (chartutil.ValidateAgainstSingleSchema); relative references resolve
// against it, i.e. against the root of the local file system.
const schemaURL = "file:///values.schema.json"

// checkSchemas compiles the values.schema.json of c and of every subchart in
// it (enabled or not) exactly as Helm v3.22 does, but with a loader that
// refuses everything outside the schema document. Helm's own compiler loads
// file://, http:// and https:// URLs named by $ref, $dynamicRef, $schema (and
// relative references, which resolve against file:///): a chart could make the
// repo-server read local files or reach internal services and leak parts of
// them in validation messages. Once every schema compiles here without a load,
// Helm's compilation of the same bytes loads nothing either.
//
// urn: references are resolved as Helm resolves them (chartutil.URNResolver,
// else a permissive schema). A schema that does not compile is refused here
// too, as Helm would refuse it.
func checkSchemas(c *chart.Chart) error {
	var walk func(c *chart.Chart, where string, depth int) error
	walk = func(c *chart.Chart, where string, depth int) error {
		if depth > maxChartDepth {
			return fmt.Errorf("%s: subcharts nested more than %d levels: %w", where, maxChartDepth, errdef.ErrLimitExceeded)
		}
		if len(c.Schema) > 0 {
			if err := compileSchema(c.Schema); err != nil {
				return fmt.Errorf("%s: %w", path.Join(where, "values.schema.json"), err)
			}
		}
		for _, d := range c.Dependencies() {
			if err := walk(d, path.Join(where, "charts", d.Name()), depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(c, c.Name(), 0)
}

func init() {
	// Helm resolves a urn: reference it cannot resolve to a permissive schema
	// and logs a warning on the process's stderr through the standard log
	// package, which would add a line to the CLI's one-line error output.
	// Resolve it to the same permissive schema, silently.
	chartutil.URNResolver = func(string) (any, error) { return true, nil }
}

// maxChartDepth bounds subchart nesting (real charts have two or three levels).
const maxChartDepth = 32

// errRefused marks a reference the schema loader refused.
var errRefused = errors.New("refused")

// chartLoader loads nothing but urn: references, recording what it refused.
type chartLoader struct {
	mu      sync.Mutex
	refused []string
}

func (l *chartLoader) Load(url string) (any, error) {
	if strings.HasPrefix(url, "urn:") {
		// What Helm's urnLoader does, without its log line.
		if doc, err := chartutil.URNResolver(url); err == nil && doc != nil {
			return doc, nil
		}
		return jsonschema.UnmarshalJSON(strings.NewReader("true"))
	}
	l.mu.Lock()
	l.refused = append(l.refused, url)
	l.mu.Unlock()
	return nil, errRefused
}

func compileSchema(schemaJSON []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cannot be compiled: %v", r)
		}
	}()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		return fmt.Errorf("is not JSON: %v", err)
	}
	l := &chartLoader{}
	c := jsonschema.NewCompiler()
	c.UseLoader(l)
	if err := c.AddResource(schemaURL, doc); err != nil {
		return fmt.Errorf("cannot be compiled: %v", err)
	}
	_, cerr := c.Compile(schemaURL)
	if len(l.refused) > 0 {
		return fmt.Errorf("refers to %q, outside the schema: remote and file references in a values schema are not supported (only references inside the document, such as \"#/$defs/x\", and urn: references): %w",
			l.refused[0], errdef.ErrUnsafeArchive)
	}
	if cerr != nil {
		return fmt.Errorf("cannot be compiled: %v", errdef.OneLine(cerr.Error()))
	}
	return nil
}
