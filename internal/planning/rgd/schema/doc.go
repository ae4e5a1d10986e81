// Package schema reads an RGD's spec.schema, kro's SimpleSchema, as the
// instance parameters of an Application: one parameter per leaf of
// schema.spec, named by its dotted path, typed and constrained by kro's
// markers; custom types (schema.types) expand into nested parameters, lists
// and maps of them are checked item by item. Instance.Spec turns the
// resolved parameters back into the instance spec the expressions read.
package schema
