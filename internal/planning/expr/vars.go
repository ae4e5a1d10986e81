package expr

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	celast "github.com/google/cel-go/common/ast"
)

// MaxVariables bounds the variables of one environment (Evaluator.Variables).
const MaxVariables = 4096

var (
	varEnvsMu sync.Mutex
	varEnvs   = map[string]*cel.Env{}
)

// environment is the evaluator's: the definitions' one, or one declaring
// e.Variables. Environments of variable sets are kept for the next render
// of the same set; a few only, so that hostile sets cannot fill memory.
func (e *Evaluator) environment() (*cel.Env, error) {
	if e.Variables == nil {
		return environment()
	}
	if len(e.Variables) > MaxVariables {
		return nil, fmt.Errorf("%d variables, more than %d", len(e.Variables), MaxVariables)
	}
	key := strings.Join(e.Variables, "\x00")
	if e.Library != nil {
		key = e.Library.Name + "\x01" + key
	}
	varEnvsMu.Lock()
	env, ok := varEnvs[key]
	varEnvsMu.Unlock()
	if ok {
		return env, nil
	}
	opts := baseOptions()
	if e.Library != nil {
		opts = slices.Concat(e.Library.Options(), sandboxOptions())
	}
	for _, v := range e.Variables {
		opts = append(opts, cel.Variable(v, cel.DynType))
	}
	env, err := cel.NewEnv(opts...)
	if err != nil {
		return nil, err
	}
	varEnvsMu.Lock()
	if len(varEnvs) >= 32 {
		clear(varEnvs)
	}
	varEnvs[key] = env
	varEnvsMu.Unlock()
	return env, nil
}

// Expressions returns the texts of the ${…} expressions in a template
// string, in order ("$${" is a literal and yields none).
func Expressions(s string) ([]string, error) {
	if !strings.Contains(s, "${") {
		return nil, nil
	}
	parts, err := parseTemplate(s)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range parts {
		if p.expr {
			out = append(out, p.text)
		}
	}
	return out, nil
}

// Ref is a variable an expression reads and the field it selects first
// from it ("" when the variable is used whole).
type Ref struct {
	Var, Field string
}

// References parses an expression (without type-checking it) and returns
// the variables it reads, each with its first selected field, sorted and
// without duplicates. Names bound inside the expression (comprehension
// variables) may be among them: callers compare against the names they
// know.
func References(expression string) ([]Ref, error) {
	env, err := environment()
	if err != nil {
		return nil, err
	}
	return references(env, expression, nil)
}

// ReferencesOf is References parsed with the evaluator's environment (its
// library's macros: a name bound by cel.bind is no variable of it).
func (e *Evaluator) ReferencesOf(expression string) ([]Ref, error) {
	return e.Inspect(expression, nil)
}

// Inspect is ReferencesOf, and check (when not nil) sees the parsed
// expression too: a caller's own refusals from the same parse.
func (e *Evaluator) Inspect(expression string, check func(celast.NavigableExpr) error) ([]Ref, error) {
	env, err := e.environment()
	if err != nil {
		return nil, err
	}
	return references(env, expression, check)
}

func references(env *cel.Env, expression string, check func(celast.NavigableExpr) error) ([]Ref, error) {
	if len(expression) > MaxExpressionLength {
		return nil, fmt.Errorf("the expression is %d characters, more than the limit of %d", len(expression), MaxExpressionLength)
	}
	ast, iss := env.Parse(expression)
	if iss != nil && iss.Err() != nil {
		return nil, iss.Err()
	}
	nav := celast.NavigateAST(ast.NativeRep())
	if check != nil {
		if err := check(nav); err != nil {
			return nil, err
		}
	}
	seen := map[Ref]bool{}
	var out []Ref
	add := func(r Ref) {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	selected := map[int64]bool{}
	for _, n := range celast.MatchDescendants(nav, celast.KindMatcher(celast.SelectKind)) {
		s := n.AsSelect()
		if op := s.Operand(); op.Kind() == celast.IdentKind {
			selected[op.ID()] = true
			add(Ref{Var: op.AsIdent(), Field: s.FieldName()})
		}
	}
	for _, n := range celast.MatchDescendants(nav, celast.KindMatcher(celast.IdentKind)) {
		if !selected[n.ID()] {
			add(Ref{Var: n.AsIdent()})
		}
	}
	slices.SortFunc(out, func(a, b Ref) int {
		if c := strings.Compare(a.Var, b.Var); c != 0 {
			return c
		}
		return strings.Compare(a.Field, b.Field)
	})
	return out, nil
}
