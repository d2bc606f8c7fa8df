package metalink

import (
	"encoding/xml"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/rsdump/rsdump/finding"
)

func (v *validator) urls(us []URL) {
	for i, u := range us {
		ref := elemRef{"url", i + 1, ""}
		v.mirror(ref, u.URL, u.Priority)
		if u.Location != "" && !isLocation(u.Location) {
			v.add(finding.Error, CodeLocationInvalid, elemRef{ref.name, ref.idx, "location"},
				"location %q is not an ISO 3166-1 alpha-2 code (§4.2.16.2)", u.Location)
		}
	}
}

func (v *validator) metaURLs(us []MetaURL) {
	for i, u := range us {
		ref := elemRef{"metaurl", i + 1, ""}
		v.mirror(ref, u.URL, u.Priority)
		mt := elemRef{ref.name, ref.idx, "mediatype"}
		v.text(mt, u.MediaType)
		switch {
		case u.MediaType == "":
			v.add(finding.Error, CodeMetaURLMediaType, mt, "a metaurl must have a mediatype (§4.2.8.2)")
		case u.MediaType == "application/x-bittorrent":
			v.add(finding.Warning, CodeMetaURLMediaType, mt, "BitTorrent metaurls must use mediatype \"torrent\" (§4.2.8.2)")
		case u.MediaType != "torrent" && !isMediaType(u.MediaType):
			v.add(finding.Warning, CodeMetaURLMediaType, mt, "mediatype %q is neither type/subtype nor \"torrent\"", u.MediaType)
		}
		if u.Name != "" {
			v.fileName(elemRef{ref.name, ref.idx, "name"}, u.Name)
		}
	}
}

// mirror checks what url and metaurl share: the IRI and the priority.
func (v *validator) mirror(ref elemRef, iri string, prio int) {
	if prio < 0 || prio > DefaultPriority {
		v.add(finding.Error, CodePriorityInvalid, elemRef{ref.name, ref.idx, "priority"}, "priority %d is not in 1..999999 (0 means absent)", prio)
	}
	if iri == "" {
		v.add(finding.Warning, CodeURLEmpty, ref, "empty IRI: this source is unusable")
		return
	}
	if !v.text(ref, iri) {
		return
	}
	u, err := url.Parse(iri)
	switch {
	case err != nil || strings.ContainsAny(iri, " \t\r\n"):
		v.add(finding.Warning, CodeURLInvalid, ref, "%q is not a valid IRI: this source is unusable", shorten(iri))
	case !u.IsAbs():
		v.add(finding.Warning, CodeURLRelative, ref, "relative IRI %q must be resolved against the metalink's own URL", shorten(iri))
	}
}

// iri checks an IRI or IRI reference that is not a download source.
func (v *validator) iri(ref elemRef, s string, absolute bool) {
	if !v.text(ref, s) {
		return
	}
	u, err := url.Parse(s)
	if err != nil || strings.ContainsAny(s, " \t\r\n") || absolute && !u.IsAbs() {
		v.add(finding.Warning, CodeIRIInvalid, ref, "%q is not a valid IRI", shorten(s))
	}
}

func (v *validator) metadata(f *File) {
	for _, t := range []struct {
		name string
		s    string
	}{{"copyright", f.Copyright}, {"description", f.Description}, {"identity", f.Identity}, {"version", f.Version}} {
		v.text(elemRef{name: t.name}, t.s)
	}
	if f.Logo != "" {
		v.iri(elemRef{name: "logo"}, f.Logo, false)
	}
	for i, l := range f.Languages {
		if v.text(elemRef{"language", i + 1, ""}, l) && !isLanguageTag(l) {
			v.add(finding.Warning, CodeLanguageInvalid, elemRef{"language", i + 1, ""}, "%q is not an RFC 5646 language tag", l)
		}
	}
	for i, o := range f.OS {
		v.text(elemRef{"os", i + 1, ""}, o)
	}
	if p := f.Publisher; p != nil {
		if p.Name == "" {
			v.add(finding.Error, CodePublisherName, elemRef{name: "publisher", attr: "name"}, "a publisher must have a name (§4.2.12.1)")
		}
		v.text(elemRef{name: "publisher", attr: "name"}, p.Name)
		if p.URL != "" {
			v.iri(elemRef{name: "publisher", attr: "url"}, p.URL, false)
		}
	}
	if s := f.Signature; s != nil {
		ref := elemRef{name: "signature", attr: "mediatype"}
		v.text(ref, s.MediaType)
		if s.MediaType == "" {
			v.add(finding.Error, CodeSignatureMedia, ref, "a signature must have a mediatype (§4.2.13.1)")
		} else if !isMediaType(s.MediaType) {
			v.add(finding.Warning, CodeSignatureMedia, ref, "mediatype %q is not type/subtype", s.MediaType)
		}
		v.text(elemRef{name: "signature"}, s.Value)
	}
}

// extensions checks that foreign elements can be written: not in the
// Metalink namespace (the schema reserves it), and with XML names.
func (v *validator) extensions(ref elemRef, es []Extension) {
	for i, e := range es {
		r := elemRef{ref.name, i + 1, ""}
		if e.Name.Space == Namespace {
			v.add(finding.Error, CodeExtensionInvalid, r, "<%s> is in the Metalink namespace, which is reserved (§5.2)", e.Name.Local)
			continue
		}
		if !validExtension(e, 0) {
			v.add(finding.Error, CodeExtensionInvalid, r, "<%s> has an invalid name, attribute or character", e.Name.Local)
		}
	}
}

func validExtension(e Extension, depth int) bool {
	if depth > 64 || !isNCName(e.Name.Local) || !isXMLText(e.Text) {
		return false
	}
	for _, a := range e.Attrs {
		if !isNCName(a.Name.Local) || !isXMLText(a.Value) || a.Name.Space == "xmlns" || a.Name.Local == "xmlns" && a.Name.Space == "" {
			return false
		}
	}
	for _, c := range e.Children {
		if c.Name.Local == "" && isXMLText(c.Text) {
			continue
		}
		if !validExtension(c, depth+1) {
			return false
		}
	}
	return true
}

// text reports a string that XML 1.0 cannot carry, and whether it is fine.
func (v *validator) text(ref elemRef, s string) bool {
	if isXMLText(s) {
		return true
	}
	v.add(finding.Error, CodeXMLChar, ref, "contains a character XML 1.0 cannot represent")
	return false
}

func isXMLText(s string) bool {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				return false
			}
		}
		if !(r == 0x09 || r == 0x0A || r == 0x0D || r >= 0x20 && r <= 0xD7FF ||
			r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF) {
			return false
		}
	}
	return true
}

func isNCName(s string) bool {
	if s == "" || strings.ContainsAny(s, ":") {
		return false
	}
	// encoding/xml's own name rules are the ones the decoder applied.
	_, err := xml.NewDecoder(strings.NewReader("<" + s + "/>")).Token()
	return err == nil
}

func isLocation(s string) bool {
	return len(s) == 2 && isASCIILetter(s[0]) && isASCIILetter(s[1])
}

func isASCIILetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// isLanguageTag applies the schema's pattern [A-Za-z]{1,8}(-[A-Za-z0-9]{1,8})*.
func isLanguageTag(s string) bool {
	for i, part := range strings.Split(s, "-") {
		if len(part) < 1 || len(part) > 8 {
			return false
		}
		for j := 0; j < len(part); j++ {
			c := part[j]
			if !isASCIILetter(c) && (i == 0 || c < '0' || c > '9') {
				return false
			}
		}
	}
	return true
}

// isMediaType checks type/subtype with RFC 4288 restricted names.
func isMediaType(s string) bool {
	t, sub, ok := strings.Cut(s, "/")
	return ok && isRestrictedName(t) && isRestrictedName(sub)
}

func isRestrictedName(s string) bool {
	if len(s) == 0 || len(s) > 127 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := isASCIILetter(c) || '0' <= c && c <= '9'
		if !alnum && (i == 0 || !strings.ContainsRune("!#$&.+-^_", rune(c))) {
			return false
		}
	}
	return true
}

// isGenerator checks §4.2.3: token ["/" token] with RFC 2616 tokens.
func isGenerator(s string) bool {
	name, ver, hasVer := strings.Cut(s, "/")
	return isToken(name) && (!hasVer || isToken(ver))
}

func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= 32 || c >= 127 || strings.ContainsRune("()<>@,;:\\\"/[]?={}", rune(c)) {
			return false
		}
	}
	return true
}
