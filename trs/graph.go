package trs

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"unsafe"
)

// A node is a term of a docGraph: its kind in the top two bits, its
// number within the kind below.
type node uint32

const (
	nodeIRI     node = iota << 30 // iris[n]
	nodeLabel                     // a blank node written _:label: labels[n]
	nodeGenid                     // a blank node written [] or ( ): the n-th
	nodeLiteral                   // lits[n]
	kindMask    node = 3 << 30
	noNode      node = ^node(0)
)

// Bounds on what one parsed document may hold. Network input must not
// crash the process or take memory out of proportion to its size.
const (
	// MaxNesting is the deepest a Turtle document may nest blank node
	// property lists and collections: a TRS document nests two or three.
	MaxNesting = 64
	// maxGrowth and growthFloor bound the memory a document's triples
	// take, as counted by docGraph.cost: at most maxGrowth times the
	// document's size, or growthFloor for a small one. What a TRS server
	// writes takes about twice its size.
	maxGrowth   = 2
	growthFloor = 1 << 20
)

// Bytes a docGraph counts for what it holds, beside the strings
// themselves: a string header and its map entry, a literal, a triple.
const (
	costTerm    = 16 + 48
	costLiteral = 56
	costTriple  = 12
)

// A docGraph is the triples of one document, held compactly: each IRI
// and blank node label once (where the parser could, a substring of the
// document, which is kept whole anyway), blank nodes written [] or ( ) as
// bare numbers, a triple as three nodes. It counts the bytes it holds
// and refuses to grow past its budget. What it holds grows by chunks
// (chunks), never copied as a growing slice is: memory is what it holds.
type docGraph struct {
	iris    chunks[string]
	iriIDs  map[string]node
	labels  chunks[string]
	labelID map[string]node
	genids  uint32
	lits    chunks[Term]
	added   chunks[triple] // as parsed, in the document's order
	triples []triple       // sorted by subject and predicate, once looked up
	doc     string         // what the graph was parsed from
	cost    int64
	budget  int64
}

type triple struct{ s, p, o node }

// newDocGraph is an empty graph of doc.
func newDocGraph(doc string) *docGraph {
	return &docGraph{doc: doc, iriIDs: map[string]node{}, labelID: map[string]node{}, budget: max(int64(len(doc))*maxGrowth, growthFloor)}
}

// ErrTooLarge is a document whose triples would take more memory than
// the parser allows for its size.
var ErrTooLarge = fmt.Errorf("its triples would take more than %d times its size in memory", maxGrowth)

// inDoc says whether s lies in the document's own bytes: a substring,
// which costs no memory the document does not take already.
func (g *docGraph) inDoc(s string) bool {
	if s == "" || g.doc == "" {
		return s == ""
	}
	p, d := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(unsafe.StringData(g.doc)))
	return p >= d && p < d+uintptr(len(g.doc))
}

// size is what s costs beside the document.
func (g *docGraph) size(s string) int {
	if g.inDoc(s) {
		return 0
	}
	return len(s)
}

func (g *docGraph) spend(n int) error {
	g.cost += int64(n)
	if g.cost > g.budget {
		return fmt.Errorf("%w (%d bytes)", ErrTooLarge, g.budget)
	}
	return nil
}

func (g *docGraph) iri(s string) (node, error) {
	if n, ok := g.iriIDs[s]; ok {
		return n, nil
	}
	n := nodeIRI | node(g.iris.add(s))
	g.iriIDs[s] = n
	return n, g.spend(costTerm + g.size(s))
}

// iriBytes is iri of a name in a buffer, copied only when new.
func (g *docGraph) iriBytes(b []byte) (node, error) {
	if n, ok := g.iriIDs[string(b)]; ok {
		return n, nil
	}
	return g.iri(string(b))
}

func (g *docGraph) label(s string) (node, error) {
	if n, ok := g.labelID[s]; ok {
		return n, nil
	}
	n := nodeLabel | node(g.labels.add(s))
	g.labelID[s] = n
	return n, g.spend(costTerm + g.size(s))
}

func (g *docGraph) genid() node {
	g.genids++
	return nodeGenid | node(g.genids)
}

func (g *docGraph) literal(t Term) (node, error) {
	n := nodeLiteral | node(g.lits.add(t))
	return n, g.spend(costLiteral + g.size(t.Value))
}

func (g *docGraph) add(s, p, o node) error {
	g.added.add(triple{s, p, o})
	return g.spend(costTriple)
}

// term is n as a Term.
func (g *docGraph) term(n node) Term {
	i := n &^ kindMask
	switch n & kindMask {
	case nodeLabel:
		return blank("b_" + g.labels.at(int(i)))
	case nodeGenid:
		return blank("genid" + strconv.FormatUint(uint64(i), 10))
	case nodeLiteral:
		return g.lits.at(int(i))
	}
	return iri(g.iris.at(int(i)))
}

// Triples are the graph's triples as Terms, in the document's order
// unless lookups sorted them already.
func (g *docGraph) Triples() []Triple {
	ts := g.triples
	if ts == nil {
		ts = g.added.all()
	}
	out := make([]Triple, len(ts))
	for i, t := range ts {
		out[i] = Triple{g.term(t.s), g.term(t.p), g.term(t.o)}
	}
	return out
}

// node finds the IRI s; noNode when the document does not name it.
func (g *docGraph) node(s string) node {
	if n, ok := g.iriIDs[s]; ok {
		return n
	}
	return noNode
}

// sort orders the triples by subject and predicate, keeping the
// document's order among the objects of each, for objects to look up.
// It is done once, at the first lookup: the graph is complete then.
func (g *docGraph) sort() {
	if g.triples != nil || g.added.n == 0 {
		return
	}
	g.triples = g.added.all()
	g.added = chunks[triple]{}
	slices.SortStableFunc(g.triples, func(a, b triple) int {
		return cmp.Or(cmp.Compare(a.s, b.s), cmp.Compare(a.p, b.p))
	})
}

// span is the triples with subject s and predicate p (any predicate when
// p is noNode).
func (g *docGraph) span(s, p node) []triple {
	g.sort()
	lo, _ := slices.BinarySearchFunc(g.triples, triple{s: s, p: p}, func(a, b triple) int {
		if p == noNode {
			return cmp.Compare(a.s, b.s)
		}
		return cmp.Or(cmp.Compare(a.s, b.s), cmp.Compare(a.p, b.p))
	})
	hi := lo
	for hi < len(g.triples) && g.triples[hi].s == s && (p == noNode || g.triples[hi].p == p) {
		hi++
	}
	return g.triples[lo:hi]
}

// has says whether s is the subject of a triple.
func (g *docGraph) has(s node) bool { return s != noNode && len(g.span(s, noNode)) > 0 }

// objects are the objects of s p, in the document's order.
func (g *docGraph) objects(s node, p string) []node {
	pn := g.node(p)
	if s == noNode || pn == noNode {
		return nil
	}
	var out []node
	for _, t := range g.span(s, pn) {
		out = append(out, t.o)
	}
	return out
}

// one is the single object of s p, which must be there exactly once.
func (g *docGraph) one(s node, p string) (node, error) {
	os := g.objects(s, p)
	if len(os) != 1 {
		return noNode, fmt.Errorf("%s has %d %s, the specification allows exactly one", g.term(s), len(os), p)
	}
	return os[0], nil
}

// typed is the subjects of type class, in the order of their terms.
func (g *docGraph) typed(class string) []node {
	t, c := g.node(rdfType), g.node(class)
	if t == noNode || c == noNode {
		return nil
	}
	var out []node
	g.sort()
	for _, tr := range g.triples {
		if tr.p == t && tr.o == c {
			out = append(out, tr.s)
		}
	}
	slices.Sort(out)
	out = slices.Compact(out)
	slices.SortFunc(out, func(a, b node) int { return cmp.Compare(g.value(a), g.value(b)) })
	return out
}

// isIRI says whether n is an IRI, and value says what it is.
func (g *docGraph) isIRI(n node) bool { return n&kindMask == nodeIRI }

func (g *docGraph) value(n node) string { return g.term(n).Value }

// chunkLen is the length of a chunk of chunks.
const chunkLen = 1024

// chunks is a list that grows a chunk at a time, never copying what it
// holds.
type chunks[T any] struct {
	c [][]T
	n int
}

// add appends v and returns its index.
func (l *chunks[T]) add(v T) int {
	if l.n%chunkLen == 0 {
		l.c = append(l.c, make([]T, 0, chunkLen))
	}
	last := &l.c[len(l.c)-1]
	*last = append(*last, v)
	l.n++
	return l.n - 1
}

func (l *chunks[T]) at(i int) T { return l.c[i/chunkLen][i%chunkLen] }

// all is the list as one slice, of its exact length.
func (l *chunks[T]) all() []T {
	out := make([]T, 0, l.n)
	for _, c := range l.c {
		out = append(out, c...)
	}
	return out
}
