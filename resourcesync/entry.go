package resourcesync

import (
	"bytes"
	"encoding/xml"
	"strings"
)

// Children of an entry that may appear once; a repeat is an error rather
// than a silent overwrite.
const (
	seenLoc = 1 << iota
	seenLastmod
	seenChangeFreq
)

// readEntry reads the children of the entry that start began, up to its end
// tag. encoding/xml guarantees the end tag matches.
func (d *Decoder) readEntry(start xml.StartElement) (URL, error) {
	var u URL
	seen := 0
	for {
		tok, err := d.token()
		if err != nil {
			return URL{}, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if err := d.entryChild(&u, &seen, t); err != nil {
				return URL{}, err
			}
		case xml.EndElement:
			return u, nil
		}
	}
}

func (d *Decoder) entryChild(u *URL, seen *int, t xml.StartElement) error {
	switch t.Name {
	case xml.Name{Space: NSSitemap, Local: "loc"}:
		return d.once(seen, seenLoc, t, func(s string) error { u.Loc = s; return nil })
	case xml.Name{Space: NSSitemap, Local: "lastmod"}:
		return d.once(seen, seenLastmod, t, func(s string) error { return setTime(&u.Lastmod, s) })
	case xml.Name{Space: NSSitemap, Local: "changefreq"}:
		return d.once(seen, seenChangeFreq, t, func(s string) error { u.ChangeFreq = s; return nil })
	case rsName("md"):
		return d.entryMD(u, t)
	case rsName("ln"):
		return d.addLink(&u.Links, t)
	}
	return d.skip()
}

// once reads the text of a child that may appear once per entry and hands
// it to set.
func (d *Decoder) once(seen *int, bit int, t xml.StartElement, set func(string) error) error {
	if *seen&bit != 0 {
		return d.errorf("more than one <%s> in the entry", t.Name.Local)
	}
	*seen |= bit
	line := d.line
	s, err := d.text(t)
	if err != nil {
		return err
	}
	if err := set(s); err != nil {
		d.line = line // report the start tag's line, as for attributes
		return d.errorf("<%s>: %w", t.Name.Local, err)
	}
	return nil
}

func (d *Decoder) entryMD(u *URL, t xml.StartElement) error {
	if u.MD != nil {
		return d.errorf("more than one <rs:md> in the entry")
	}
	u.MD = new(MD)
	return d.readMD(u.MD, t)
}

// readMD reads the attributes of an <rs:md> into m and skips its content,
// which the schema leaves empty.
func (d *Decoder) readMD(m *MD, t xml.StartElement) error {
	if err := d.attrs(setAttrs(m, t, mdAttrs)); err != nil {
		return err
	}
	m.Pieces = readPieces(t)
	return d.skip()
}

// addLink reads an <rs:ln> into links, refusing more than MaxLinks.
func (d *Decoder) addLink(links *[]Link, t xml.StartElement) error {
	if len(*links) >= MaxLinks {
		return d.errorf("more than %d <rs:ln> elements", MaxLinks)
	}
	var l Link
	if err := d.attrs(setAttrs(&l, t, linkAttrs)); err != nil {
		return err
	}
	*links = append(*links, l)
	return d.skip()
}

// text returns the character data of a simple element up to its end tag,
// without surrounding XML whitespace. Comments inside are dropped; a child
// element is an error.
func (d *Decoder) text(start xml.StartElement) (string, error) {
	// The text is usually one piece, copied once into first (the token's
	// bytes do not outlive the next one); b gathers any further pieces,
	// rather than string +=, which is quadratic in their number.
	var first string
	var b []byte
	pieces := 0
	for {
		tok, err := d.token()
		if err != nil {
			return "", err
		}
		switch t := tok.(type) {
		case xml.CharData:
			switch pieces++; pieces {
			case 1:
				first = string(t)
			case 2:
				b = append([]byte(first), t...)
			default:
				b = append(b, t...)
			}
		case xml.StartElement:
			return "", d.errorf("element %s inside <%s>", showName(t.Name), start.Name.Local)
		case xml.EndElement:
			if pieces > 1 {
				return string(bytes.Trim(b, xmlSpace)), nil
			}
			return strings.Trim(first, xmlSpace), nil
		}
	}
}
