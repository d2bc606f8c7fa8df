package resourcesync

import "github.com/rsdump/rsdump/internal/digest"

// HashSet is the value of a `hash` attribute (§7): digests in document
// order, each an algorithm token ("sha-256", "md5", ...) and lower-case
// hex. Tokens of algorithms rsdump cannot compute are kept, so that a
// report can name them; Known lists those it can.
type HashSet = digest.Set

// HashSum is one `alg:hex` token of a HashSet.
type HashSum = digest.Sum

// ParseHash reads a `hash` attribute. A token of a known algorithm whose
// digest has the wrong length or is not hex is an error.
func ParseHash(attr string) (HashSet, error) { return digest.Parse(attr) }
