package cel

import (
	"strings"
	"time"

	"github.com/argocd-ocm-plugin/argocd-ocm-plugin/internal/planning/config/expr"
)

// Limits is the sandbox of one RGD's expressions: 0 takes package expr's
// defaults.
type Limits struct {
	CostLimit uint64
	Timeout   time.Duration
}

// Evaluator evaluates the expressions of one RGD with the variables vars
// (schema, the node ids, the forEach iterators).
func (l Limits) Evaluator(vars []string) *expr.Evaluator {
	return &expr.Evaluator{Variables: vars, CostLimit: l.CostLimit, Timeout: l.Timeout}
}

// Expressions are the ${…} expressions of a template string, in order.
func Expressions(s string) ([]string, error) { return expr.Expressions(s) }

// Ref is a variable an expression reads and the first field it selects.
type Ref = expr.Ref

// References are the variables an expression reads (see expr.References).
func References(expression string) ([]Ref, error) { return expr.References(expression) }

// IsWholeExpression reports whether s is exactly one ${…}.
func IsWholeExpression(s string) bool {
	s = strings.TrimSpace(s)
	es, err := expr.Expressions(s)
	return err == nil && len(es) == 1 && s == "${"+es[0]+"}"
}
