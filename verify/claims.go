package verify

import (
	"hash/maphash"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/text/unicode/norm"

	"github.com/rsdump/rsdump/internal/digest"
)

// Claims finds the targets that two packages of one Resource Dump both
// carry with different content, which would make a restore keep whichever
// package came last, and the targets that differ only by case or Unicode
// normalisation (NFC against NFD), which collide on macOS and Windows. A
// dump has up to millions of bitstreams, so a target costs a few words: a
// hash of its name and of its content, never the name itself. It is safe
// for concurrent use.
type Claims struct {
	mu    sync.Mutex
	seed  maphash.Seed
	pkgs  []string
	fold  map[uint64]claim // by folded target: its first claim
	exact map[uint64]claim // by exact target, for names that fold to an earlier one
}

// claim is what is kept of one target.
type claim struct {
	key   uint64 // hash of the exact target
	sum   uint64 // hash of its length and strongest hash
	pkg   int32
	n     int32 // its entry number in the package's manifest
	clash int32 // 1 + a package found to carry it with other content; 0 when none
}

// ClashKind says how a target clashes with one claimed before.
type ClashKind int

// The kinds of clash.
const (
	NoClash      ClashKind = iota
	ClashContent           // another package carries the target with other content
	ClashFold              // another target differs from it only by case or Unicode normalisation
)

// Clash is a target's clash with one claimed before.
type Clash struct {
	Kind    ClashKind
	Package string // the other package
	Entry   int    // the other's manifest entry number; 0 when unknown
}

// NewClaims returns an empty table.
func NewClaims() *Claims {
	return &Claims{seed: maphash.MakeSeed(), fold: map[uint64]claim{}, exact: map[uint64]claim{}}
}

// AddPackage registers a package by the name findings give it and returns
// its number for Claim.
func (c *Claims) AddPackage(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pkgs = append(c.pkgs, name)
	return len(c.pkgs) - 1
}

// Claim records that entry n of package pkg carries target with the
// content that length and want describe, and returns its clash with what
// was claimed before. Once a target is found in two packages with
// different content, every later claim of it clashes, the first package's
// own included: a caller that claims each target twice (once to survey,
// once before writing) refuses both packages. A claim by another package
// with the same content is no clash.
func (c *Claims) Claim(pkg, n int, target string, length int64, want digest.Set) Clash {
	cl := claim{key: c.hash(target), sum: c.hash(content(length, want)), pkg: int32(pkg), n: int32(n)}
	fk := c.hash(fold(target))
	c.mu.Lock()
	defer c.mu.Unlock()
	first, ok := c.fold[fk]
	switch {
	case !ok:
		c.fold[fk] = cl
		return Clash{}
	case first.key == cl.key:
		var clash Clash
		c.fold[fk], clash = c.again(first, cl)
		return clash
	}
	if prev, ok := c.exact[cl.key]; ok {
		var clash Clash
		c.exact[cl.key], clash = c.again(prev, cl)
		return clash
	}
	c.exact[cl.key] = cl
	return Clash{Kind: ClashFold, Package: c.pkgs[first.pkg], Entry: int(first.n)}
}

// again compares a later claim of a target with its first one.
func (c *Claims) again(first, cl claim) (claim, Clash) {
	if first.sum != cl.sum && first.clash == 0 {
		first.clash = cl.pkg + 1
	}
	if first.clash == 0 {
		return first, Clash{}
	}
	if first.pkg != cl.pkg {
		return first, Clash{Kind: ClashContent, Package: c.pkgs[first.pkg], Entry: int(first.n)}
	}
	return first, Clash{Kind: ClashContent, Package: c.pkgs[first.clash-1]}
}

func (c *Claims) hash(s string) uint64 { return maphash.String(c.seed, s) }

// content identifies a bitstream's content by its length and strongest
// hash, or all its hashes when rsdump knows none of them.
func content(length int64, want digest.Set) string {
	tok := want.String()
	if s, ok := want.Strongest(); ok {
		tok = s.String()
	}
	return strconv.FormatInt(length, 10) + " " + strings.ToLower(tok)
}

// fold is the form two names share when macOS or Windows would take them
// for one file: NFC, lower case.
func fold(s string) string { return strings.ToLower(norm.NFC.String(s)) }

// Message describes a clash for a finding about the target.
func (cl Clash) Message() string {
	other := cl.Package
	if cl.Entry > 0 {
		other = "entry " + strconv.Itoa(cl.Entry) + " of " + cl.Package
	}
	switch cl.Kind {
	case ClashContent:
		return other + " carries the same target with other content; which one a restore keeps would be undefined"
	case ClashFold:
		return "differs only by case or Unicode normalisation from a target of " + other + "; the two collide on macOS and Windows"
	}
	return ""
}
