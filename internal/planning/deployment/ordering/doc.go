// Package ordering is the Argo CD placement a deployment definition asks
// for: the sync waves and hooks of a render and of individual objects
// (Hook, OrderingRule, Target), and the definition's jobs (Job), batch/v1
// Jobs run as hooks. It validates those fields when a definition is read,
// lists their ${…} for compilation, evaluates them and builds the Job
// objects.
//
// Package config owns the definition and binds the variables of its
// expressions; this package sees them only through Fields, so it imports
// nothing of config.
package ordering
