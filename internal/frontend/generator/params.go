package generator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/errdef"
	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/source/ocm/resolve"
)

// Input parameter names (the keys of input.parameters).
const (
	ParamRepository   = "repository"
	ParamComponent    = "component"
	ParamVersion      = "version"
	ParamLatest       = "latest"
	ParamSemverFilter = "semverFilter"
	ParamSignature    = "signature"
	ParamReferences   = "references"
	ParamLabels       = "labels"
)

// Bounds of the input; real values are far smaller.
const (
	maxStringLen   = 1024 // repository, component
	maxPatternLen  = 256  // version constraint, semverFilter
	maxLatest      = 1000
	maxNames       = 64 // signature and label names
	maxNameLen     = 253
	maxComponentNm = 255
)

// Query is a validated request: what to list and what to put in the entries.
type Query struct {
	Repository string
	// Component is an exact name, or a prefix when Prefix is set (the
	// pattern "example.org/platform/*" gives Component "example.org/platform/").
	Component string
	Prefix    bool
	// Constraint selects versions; nil: every release version.
	Constraint *semver.Constraints
	// Exact is a version that is not a constraint ("1.2.3+build.7"): only it.
	Exact string
	// Latest is how many of the newest matching versions per component; 0: all.
	Latest int
	Filter *regexp.Regexp
	// Signatures must all verify with the generator's keys of these names.
	Signatures []string
	References bool
	// Labels: copy component labels; LabelNames restricts which (nil: all).
	Labels     bool
	LabelNames []string
}

// ParseQuery decodes input.parameters strictly: every key must be known and
// of its JSON type; otherwise the error wraps errdef.ErrInvalidInput and says
// which parameter and why.
func ParseQuery(params map[string]json.RawMessage) (Query, error) {
	q := Query{Latest: 1}
	known := []string{ParamRepository, ParamComponent, ParamVersion, ParamLatest, ParamSemverFilter, ParamSignature, ParamReferences, ParamLabels}
	for k := range params {
		if !contains(known, k) {
			return q, invalid("unknown parameter %s (known: %s)", errdef.Quote(k), strings.Join(known, ", "))
		}
	}
	var err error
	if q.Repository, err = str(params, ParamRepository, true, maxStringLen); err != nil {
		return q, err
	}
	comp, err := str(params, ParamComponent, true, maxStringLen)
	if err != nil {
		return q, err
	}
	if q.Component, q.Prefix, err = parseComponent(comp); err != nil {
		return q, err
	}
	v, err := str(params, ParamVersion, false, maxPatternLen)
	if err != nil {
		return q, err
	}
	if v = strings.TrimSpace(v); v != "" {
		if resolve.IsConstraint(v) {
			if q.Constraint, err = semver.NewConstraint(v); err != nil {
				return q, invalid("parameter version: %s is not a semver constraint: %v", errdef.Quote(v), err)
			}
		} else {
			if strings.Contains(v, "@") {
				return q, invalid("parameter version: %s: a pinned version selects nothing to generate; give a version or a constraint", errdef.Quote(v))
			}
			q.Exact = v
		}
	}
	if raw, ok := params[ParamLatest]; ok && !isNull(raw) {
		var n json.Number
		if err := strict(raw, &n); err != nil || kind(raw) != "a number" {
			return q, invalid("parameter latest: want a whole number ≥ 0, got %s", kind(raw))
		}
		i, err := n.Int64()
		if err != nil || i < 0 || i > maxLatest {
			return q, invalid("parameter latest: want a whole number from 0 (all) to %d, got %s", maxLatest, errdef.Field(n.String()))
		}
		q.Latest = int(i)
	}
	f, err := str(params, ParamSemverFilter, false, maxPatternLen)
	if err != nil {
		return q, err
	}
	if f != "" {
		// RE2: matching is linear in the version's length, whatever the pattern.
		if q.Filter, err = regexp.Compile(f); err != nil {
			return q, invalid("parameter semverFilter: %v", err)
		}
	}
	if q.Signatures, _, err = names(params, ParamSignature, false); err != nil {
		return q, err
	}
	if q.References, err = boolean(params, ParamReferences); err != nil {
		return q, err
	}
	var all bool
	if q.LabelNames, all, err = names(params, ParamLabels, true); err != nil {
		return q, err
	}
	q.Labels = all || len(q.LabelNames) > 0
	return q, nil
}

// parseComponent accepts "name" or the prefix pattern "prefix/*".
func parseComponent(s string) (string, bool, error) {
	s = strings.TrimSpace(s)
	prefix := false
	if strings.HasSuffix(s, "/*") {
		s, prefix = strings.TrimSuffix(s, "*"), true
	}
	check := strings.TrimSuffix(s, "/")
	if check == "" || len(check) > maxComponentNm || strings.ContainsAny(check, "*?[]:@ \\\t\n") {
		return "", false, invalid("parameter component: %s is not a component name or a prefix pattern like example.org/platform/*", errdef.Quote(s))
	}
	for _, seg := range strings.Split(check, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return "", false, invalid("parameter component: %s has an empty, . or .. segment", errdef.Quote(s))
		}
	}
	return s, prefix, nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errdef.ErrInvalidInput}, args...)...)
}

// strict decodes raw into v, numbers kept as json.Number.
func strict(raw json.RawMessage, v any) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	return d.Decode(v)
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// kind names a JSON value's type for messages (never its content: a
// parameter may hold a secret pasted by mistake).
func kind(raw json.RawMessage) string {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 {
		return "nothing"
	}
	switch b[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

func str(params map[string]json.RawMessage, name string, required bool, max int) (string, error) {
	raw, ok := params[name]
	if !ok || isNull(raw) {
		if required {
			return "", invalid("parameter %s is required", name)
		}
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", invalid("parameter %s: want a string, got %s", name, kind(raw))
	}
	if len(s) > max {
		return "", invalid("parameter %s: longer than %d bytes", name, max)
	}
	if required && strings.TrimSpace(s) == "" {
		return "", invalid("parameter %s is empty", name)
	}
	return s, nil
}

func boolean(params map[string]json.RawMessage, name string) (bool, error) {
	raw, ok := params[name]
	if !ok || isNull(raw) {
		return false, nil
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		return false, invalid("parameter %s: want a boolean, got %s", name, kind(raw))
	}
	return b, nil
}

// names reads a string or an array of strings; with allowBool, true means
// "all" and false "none".
func names(params map[string]json.RawMessage, name string, allowBool bool) ([]string, bool, error) {
	raw, ok := params[name]
	if !ok || isNull(raw) {
		return nil, false, nil
	}
	want := "a string or an array of strings"
	if allowBool {
		want = "a boolean or an array of strings"
		var b bool
		if json.Unmarshal(raw, &b) == nil {
			return nil, b, nil
		}
	}
	var list []string
	var one string
	switch {
	case !allowBool && json.Unmarshal(raw, &one) == nil:
		list = []string{one}
	case json.Unmarshal(raw, &list) == nil:
	default:
		return nil, false, invalid("parameter %s: want %s, got %s", name, want, kind(raw))
	}
	if len(list) > maxNames {
		return nil, false, invalid("parameter %s: more than %d names", name, maxNames)
	}
	out := make([]string, 0, len(list))
	for _, n := range list {
		n = strings.TrimSpace(n)
		if n == "" || len(n) > maxNameLen {
			return nil, false, invalid("parameter %s: names must be 1 to %d bytes", name, maxNameLen)
		}
		if !contains(out, n) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out, false, nil
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}
