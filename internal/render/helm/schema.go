package helm

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	commonutil "helm.sh/helm/v4/pkg/chart/common/util"
	chart "helm.sh/helm/v4/pkg/chart/v2"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
)

// schemaURL is the URL Helm gives every values.schema.json when it compiles it
// (commonutil.ValidateAgainstSingleSchema); relative references resolve
// against it, i.e. against the root of the local file system.
const schemaURL = "file:///values.schema.json"

// checkSchemas compiles the values.schema.json of c and of every subchart in
// it (enabled or not) exactly as Helm v4.3.2 does, but with a loader that
// refuses everything outside the schema document. Helm's own compiler loads
// file://, http:// and https:// URLs named by $ref, $dynamicRef, $schema (and
// relative references, which resolve against file:///): a chart could make the
// repo-server read local files or reach internal services and leak parts of
// them in validation messages. Once every schema compiles here without a load,
// Helm's compilation of the same bytes loads nothing either.
//
// urn: references are resolved as Helm resolves them (commonutil.URNResolver,
// else a permissive schema). A schema that does not compile is refused here
// too, as Helm would refuse it.
//
// The compiled schemas are returned, by their text, for validateValues.
func checkSchemas(c *chart.Chart) (compiledSchemas, error) {
	compiled := compiledSchemas{}
	var walk func(c *chart.Chart, where string, depth int) error
	walk = func(c *chart.Chart, where string, depth int) error {
		if depth > maxChartDepth {
			return fmt.Errorf("%s: subcharts nested more than %d levels: %w", where, maxChartDepth, errdef.ErrLimitExceeded)
		}
		if _, done := compiled[string(c.Schema)]; len(c.Schema) > 0 && !done {
			s, err := compileSchema(c.Schema)
			if err != nil {
				return fmt.Errorf("%s: %w", path.Join(where, "values.schema.json"), err)
			}
			compiled[string(c.Schema)] = s
		}
		for _, d := range c.Dependencies() {
			if err := walk(d, path.Join(where, "charts", d.Name()), depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(c, c.Name(), 0); err != nil {
		return nil, err
	}
	return compiled, nil
}

// compiledSchemas are values schemas compiled as Helm compiles them, by
// their text.
type compiledSchemas map[string]*jsonschema.Schema

// validateValues is commonutil.ValidateAgainstSchema (Helm v4.3.2, the same
// messages) with the schemas compiled by checkSchemas: Helm compiles every
// schema again for every render. A schema not in schemas is validated by
// Helm's commonutil.ValidateAgainstSingleSchema.
func validateValues(c *chart.Chart, values map[string]any, schemas compiledSchemas) error {
	var sb strings.Builder
	if c.Schema != nil {
		if err := validateSingle(values, c.Schema, schemas); err != nil {
			fmt.Fprintf(&sb, "%s:\n", c.Name())
			sb.WriteString(err.Error())
		}
	}
	for _, sub := range c.Dependencies() {
		raw, exists := values[sub.Name()]
		if !exists || raw == nil {
			continue
		}
		subValues, ok := raw.(map[string]any)
		if !ok {
			fmt.Fprintf(&sb, "%s:\ninvalid type for values: expected object (map), got %T\n", sub.Name(), raw)
			continue
		}
		if err := validateValues(sub, subValues, schemas); err != nil {
			sb.WriteString(err.Error())
		}
	}
	if sb.Len() > 0 {
		return errors.New(sb.String())
	}
	return nil
}

// validateSingle is commonutil.ValidateAgainstSingleSchema with schemas.
func validateSingle(values map[string]any, schemaJSON []byte, schemas compiledSchemas) (err error) {
	s, ok := schemas[string(schemaJSON)]
	if !ok {
		return commonutil.ValidateAgainstSingleSchema(values, schemaJSON)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("unable to validate schema: %s", r)
		}
	}()
	if err := s.Validate(values); err != nil {
		// commonutil.JSONSchemaValidationError's message.
		return errors.New(strings.TrimPrefix(err.Error(), "jsonschema validation failed with 'file:///values.schema.json#'\n") + "\n")
	}
	return nil
}

func init() {
	// Helm resolves a urn: reference it cannot resolve to a permissive schema
	// and logs a warning on the process's stderr through the standard log
	// package, which would add a line to the CLI's one-line error output.
	// Resolve it to the same permissive schema, silently.
	commonutil.URNResolver = func(string) (any, error) { return true, nil }
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
		if doc, err := commonutil.URNResolver(url); err == nil && doc != nil {
			return doc, nil
		}
		return jsonschema.UnmarshalJSON(strings.NewReader("true"))
	}
	l.mu.Lock()
	l.refused = append(l.refused, url)
	l.mu.Unlock()
	return nil, errRefused
}

func compileSchema(schemaJSON []byte) (_ *jsonschema.Schema, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cannot be compiled: %v", r)
		}
	}()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		return nil, fmt.Errorf("is not JSON: %v", err)
	}
	l := &chartLoader{}
	c := jsonschema.NewCompiler()
	c.UseLoader(l)
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("cannot be compiled: %v", err)
	}
	compiled, cerr := c.Compile(schemaURL)
	if len(l.refused) > 0 {
		return nil, fmt.Errorf("refers to %s, outside the schema: remote and file references in a values schema are not supported (only references inside the document, such as \"#/$defs/x\", and urn: references): %w",
			errdef.Quote(l.refused[0]), errdef.ErrUnsafeArchive)
	}
	if cerr != nil {
		return nil, fmt.Errorf("cannot be compiled: %v", errdef.OneLine(cerr.Error()))
	}
	return compiled, nil
}

// validValues remembers values that passed a chart's schemas, by the
// SHA-256 of their JSON (json.Marshal: map keys sorted), so that an
// Application rendered again with the same values is not validated again:
// validating was 4 % of a warm cert-manager generation. The values a chart
// is validated with (its defaults coalesced with these, dependencies
// processed by them) follow from the chart, which the ChartCache entry
// holding this is, and these values. Only passes are kept (a failure is
// validated again, for its message), at most maxValidValues, all forgotten
// at once past that; the entry counts them (size), so that one tenant's
// many values cannot grow a worker past the cache's bound. A nil
// *validValues keeps nothing.
type validValues struct {
	mu   sync.Mutex
	seen map[[32]byte]struct{}
}

const maxValidValues = 64

// validValueCost is what a remembered key is counted at: the key and its
// map slot.
const validValueCost = 64

// size is what the remembered keys are counted at.
func (vv *validValues) size() int64 {
	vv.mu.Lock()
	defer vv.mu.Unlock()
	return int64(len(vv.seen)) * validValueCost
}

// key is vals' key, ok false when they have none (json.Marshal refuses
// them: NaN, say); then they are validated every time.
func (vv *validValues) key(vals map[string]any) (k [32]byte, ok bool) {
	if vv == nil {
		return k, false
	}
	js, err := json.Marshal(vals)
	if err != nil {
		return k, false
	}
	return sha256.Sum256(js), true
}

func (vv *validValues) has(k [32]byte) bool {
	if vv == nil {
		return false
	}
	vv.mu.Lock()
	defer vv.mu.Unlock()
	_, ok := vv.seen[k]
	return ok
}

func (vv *validValues) add(k [32]byte) {
	if vv == nil {
		return
	}
	vv.mu.Lock()
	defer vv.mu.Unlock()
	if vv.seen == nil || len(vv.seen) >= maxValidValues {
		vv.seen = map[[32]byte]struct{}{}
	}
	vv.seen[k] = struct{}{}
}
