package cel

import (
	"errors"
	"strings"
	"time"

	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types/ref"
	krocel "github.com/kubernetes-sigs/kro/pkg/cel"
	"github.com/kubernetes-sigs/kro/pkg/cel/conversion"
	"github.com/kubernetes-sigs/kro/pkg/cel/library"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/expr"
)

// Library is kro's CEL environment, BaseDeclarations of kro's pkg/cel at
// the module version go.mod pins: cel-go's two-variable comprehensions,
// lists, strings, bindings, optional types and encoders; the Kubernetes
// lists, URLs, regex, quantity, IP, CIDR and semver libraries; kro's
// random, maps, JSON, hash, lists, omit and runtime. Results convert as
// kro converts them (conversion.GoNativeType, then EnsureJSONSafe: ints
// stay int64, a uint fits an int64 or is refused, bytes are refused).
var Library = &expr.Library{Name: "kro", Options: krocel.BaseDeclarations, Native: kroNative}

func kroNative(v ref.Val) (any, error) {
	out, err := conversion.GoNativeType(v)
	if err != nil {
		return nil, err
	}
	return conversion.EnsureJSONSafe(out)
}

// Limits is the sandbox of one RGD's expressions: 0 takes package expr's
// defaults. kro's functions run inside it.
type Limits struct {
	CostLimit uint64
	Timeout   time.Duration
}

// Evaluator evaluates the expressions of one RGD in kro's environment with
// the variables vars (schema, the node ids, the forEach iterators), each a
// dynamic value as kro declares resource ids (WithResourceIDs).
func (l Limits) Evaluator(vars []string) *expr.Evaluator {
	return &expr.Evaluator{Variables: vars, Library: Library, CostLimit: l.CostLimit, Timeout: l.Timeout}
}

// parser parses expressions in kro's environment (its macros: cel.bind,
// two-variable comprehensions).
var parser = &expr.Evaluator{Variables: []string{}, Library: Library}

// Expressions are the ${…} expressions of a template string, in order.
func Expressions(s string) ([]string, error) { return expr.Expressions(s) }

// Ref is a variable an expression reads and the first field it selects.
type Ref = expr.Ref

// IsWholeExpression reports whether s is exactly one ${…}.
func IsWholeExpression(s string) bool {
	s = strings.TrimSpace(s)
	es, err := expr.Expressions(s)
	return err == nil && len(es) == 1 && s == "${"+es[0]+"}"
}

// Check returns the variables an expression reads, parsed in kro's
// environment (see expr.References), and refuses what kro's graph builder
// refuses in a resource template, includeWhen or forEach expression with
// its default feature gates: omit() (behind the CELOmitFunction gate, off
// by default) and the runtime variable (status conditions only). One parse
// serves both.
func Check(expression string) ([]Ref, error) { return parser.Inspect(expression, refuse) }

func refuse(nav celast.NavigableExpr) error {
	for _, c := range celast.MatchDescendants(nav, celast.KindMatcher(celast.CallKind)) {
		if c.AsCall().FunctionName() == "omit" && !c.AsCall().IsMemberFunction() {
			return errors.New("omit() requires kro's CELOmitFunction feature gate, which is off by default")
		}
	}
	for _, i := range celast.MatchDescendants(nav, celast.KindMatcher(celast.IdentKind)) {
		if i.AsIdent() == library.RuntimeVarName {
			return errors.New("the runtime variable can only be used in the status conditions of an RGD's schema")
		}
	}
	return nil
}
