package transfer

import "net/http"

// LinkTargets returns the targets of the RFC 8288 Link headers in h whose
// rel includes rel, resolved against base: the same parser that reads
// RFC 6249's rel=duplicate and rel=describedby, used by sync for
// ResourceSync's rel="resourcesync" (§6.3.3).
func LinkTargets(h http.Header, base, rel string) []string {
	var out []string
	for _, l := range parseLinks(h.Values("Link"), base) {
		if l.rel[rel] {
			out = append(out, l.url)
		}
	}
	return out
}
