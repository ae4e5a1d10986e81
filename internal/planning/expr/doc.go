// Package expr evaluates the ${…} expressions of deployment definitions:
// CEL (cel-go) with the standard library, the strings, lists, math and
// encoders extensions, optional values and image-reference helpers, over
// the variables a definition's expressions see (parameters, component,
// resources, references, app, cluster, and values in patches).
//
// Every expression is bounded: its length (MaxExpressionLength), its cost
// (Evaluator.CostLimit, default DefaultCostLimit), its wall time
// (Evaluator.Timeout, default DefaultExprTimeout) and the size of its
// result. A failure is an *Error naming where the expression is, its text
// and, when CEL knows it, the column; names that do not exist are caught
// before evaluation, with a suggestion.
//
// Package config decides what the variables hold and where expressions may
// appear; this package only evaluates them.
package expr
