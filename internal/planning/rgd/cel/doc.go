// Package cel is the expression language of ResourceGraphDefinitions: the
// ${…} templates of a node (whole-value or inside a string), the references
// an expression makes (the graph's edges), and the evaluator that runs them
// in the plugin's CEL sandbox (package expr: cost limit, per-expression
// deadline, result size), with a variable for schema, for each node and for
// each forEach iterator.
package cel
