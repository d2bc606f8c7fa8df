package resourcesync

import (
	"encoding/xml"
	"fmt"
	"strings"

	"github.com/rsdump/rsdump/internal/digest"
)

// NSPieces is the namespace of rsdump's piece hashes: a name, never
// fetched.
const NSPieces = "https://rsdump.org/ns/pieces/1"

// piecesPrefix is the prefix the encoder binds NSPieces to, on the
// <rs:md> that carries them.
const piecesPrefix = "pieces"

// Pieces are the hashes of a bitstream's pieces, an rsdump extension of
// <rs:md> in its own namespace (NSPieces), so that a reader that knows
// them can check, and fetch again, a piece of a large bitstream rather
// than all of it, and one that does not ignores them, as the schema lets
// it (rs:md allows attributes of other namespaces):
//
//	<rs:md hash="sha-256:…" length="209715200" xmlns:pieces="https://rsdump.org/ns/pieces/1"
//	  pieces:length="1048576" pieces:hash="sha-256:<the 200 pieces' digests, one after another>"/>
//
// The bitstream is cut into pieces of Length bytes from its start, the
// last one shorter; Hash is an algorithm token and the hex digests of the
// pieces, in order, with nothing between them.
type Pieces struct {
	Length int64
	Hash   string // raw attribute
}

// Sums checks the piece hashes against a bitstream of length bytes and
// returns their algorithm and hex digests, in order.
func (p *Pieces) Sums(length int64) (alg string, sums []string, err error) {
	alg, hexes, ok := strings.Cut(p.Hash, ":")
	n := digest.PieceCount(length, p.Length)
	w := digest.HexLen(alg)
	switch {
	case !ok || !digest.Known(alg):
		return "", nil, fmt.Errorf("pieces:hash %.20q: not an algorithm rsdump computes", p.Hash)
	case p.Length <= 0:
		return "", nil, fmt.Errorf("pieces:length %d is not positive", p.Length)
	case int64(len(hexes)) != n*int64(w):
		return "", nil, fmt.Errorf("pieces:hash has %d hex digits; %d pieces of %d bytes (of %d) take %d", len(hexes), n, p.Length, length, n*int64(w))
	}
	for i := range n {
		s := hexes[i*int64(w) : (i+1)*int64(w)]
		if _, err := digest.Parse(alg + ":" + s); err != nil {
			return "", nil, fmt.Errorf("pieces:hash, piece %d: %w", i, err)
		}
		sums = append(sums, s)
	}
	alg, _ = digest.Canonical(alg)
	return alg, sums, nil
}

// writePieces writes the piece attributes, with the namespace declaration
// they need, inside an <rs:md> being written.
func writePieces(x *xmlBuf, p *Pieces) {
	x.attr("rs:md", "xmlns:"+piecesPrefix, NSPieces)
	x.intAttr(piecesPrefix+":length", p.Length)
	x.attr("rs:md", piecesPrefix+":hash", p.Hash)
}

// readPieces reads the piece attributes of an <rs:md>: nil when it has
// none, or not both of them, or a length that is not a positive number
// (a reader then takes the bitstream whole, as one that knows nothing of
// them does).
func readPieces(t xml.StartElement) *Pieces {
	var p Pieces
	for _, a := range t.Attr {
		if a.Name.Space != NSPieces {
			continue
		}
		switch a.Name.Local {
		case "length":
			n, err := parseInt(a.Value, 64)
			if err != nil || n <= 0 {
				return nil
			}
			p.Length = n
		case "hash":
			p.Hash = a.Value
		}
	}
	if p.Length == 0 || p.Hash == "" {
		return nil
	}
	return &p
}
