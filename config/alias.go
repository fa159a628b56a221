package config

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// A file can ask for far more than it says: ten merges of an anchor that
// itself merges ten, six levels deep, is 496 bytes that decode to a
// million mappings (3.9s, 448 MB and a million error lines, measured).
// So what aliases and merge keys expand to is counted while decoding, and
// a file whose aliases would decode to more than aliasFactor times its own
// size (or minAliasBudget nodes, for small files) is refused. Sharing
// settings through anchors, as documented, stays far below that: each use
// copies an anchor once, so a 1,000-node anchor can be merged into 1,000
// jobs however short they are. At the limit a refusal takes 0.1 to 0.5s
// and 17 MB (BenchmarkMergeBomb).
const (
	aliasFactor    = 10
	minAliasBudget = 1_000_000
)

// expansion tracks the aliases being decoded.
type expansion struct {
	budget, used int
	// stack holds the aliases being expanded, outermost first.
	stack []*yaml.Node
	// refused is the problem that ended decoding, if any.
	refused *Problem
}

func newExpansion(root *yaml.Node) *expansion {
	return &expansion{budget: max(minAliasBudget, aliasFactor*countNodes(root))}
}

// countNodes counts the nodes of the file as written, not following aliases.
func countNodes(n *yaml.Node) int {
	if n == nil {
		return 0
	}
	c := 1
	for _, k := range n.Content {
		c += countNodes(k)
	}
	return c
}

// enter starts decoding the alias n. It returns false when the alias refers
// to a node that contains it (&a [*a], which yaml parses into a cycle) or
// when decoding has been refused.
func (d decoder) enter(n *yaml.Node, path string) bool {
	x := d.exp
	if x.refused != nil {
		return false
	}
	for _, a := range x.stack {
		if a.Alias == n.Alias {
			d.refuse(n, path, fmt.Sprintf("alias *%s refers to a value that contains it", n.Value))
			return false
		}
	}
	x.stack = append(x.stack, n)
	return true
}

func (d decoder) leave() { d.exp.stack = d.exp.stack[:len(d.exp.stack)-1] }

// spend counts k nodes decoded; inside an alias they count against the
// budget. It returns false once decoding has been refused.
func (d decoder) spend(k int, path string) bool {
	x := d.exp
	if x.refused != nil {
		return false
	}
	if len(x.stack) == 0 {
		return true
	}
	x.used += k
	if x.used > x.budget {
		// The outermost alias is the one written where it is used; the
		// inner ones are what it multiplies.
		outer := x.stack[0]
		d.refuse(outer, path, fmt.Sprintf("alias *%s expands to more than %d nodes: aliases and merge keys may expand to %d times the file's own nodes (at least %d)",
			outer.Value, x.budget, aliasFactor, minAliasBudget))
		return false
	}
	return true
}

// refuse ends decoding with one problem at n; the problems found so far
// are dropped, as they would mostly be copies of one mistake.
func (d decoder) refuse(n *yaml.Node, path, msg string) {
	d.exp.refused = &Problem{File: d.file, Line: n.Line, Col: n.Column, Path: path, Message: msg}
}

// follow resolves an alias n (within the expansion's bounds) and spends
// one node of the budget on what it decodes; ok is false when either
// refused. done ends the alias's expansion: the caller defers it.
func (d decoder) follow(n *yaml.Node, path string) (_ *yaml.Node, done func(), ok bool) {
	done = func() {}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		if !d.enter(n, path) {
			return n, done, false
		}
		done = d.leave
		n = n.Alias
	}
	return n, done, d.spend(1, path)
}
