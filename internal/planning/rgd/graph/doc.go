// Package graph reads a ResourceGraphDefinition: Decode checks its shape
// (ids, templates, forEach dimensions, bounds), and Analyze collects every
// node's ${…} expressions, the nodes they read (the edges), refuses what a
// static render cannot know (the status of a node that is not an OCM
// Resource, includeWhen or forEach over other nodes, a Secret filled from
// a parameter), and orders the nodes: a topological order, declaration
// order among equals, each node at a level one above what it reads. A
// cycle is refused, naming it.
package graph
