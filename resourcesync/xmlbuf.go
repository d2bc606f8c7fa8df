package resourcesync

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// xmlBuf builds serialized XML in a byte slice. The encoder writes bytes
// itself rather than through xml.Encoder, whose namespaced struct tags put an
// xmlns attribute on every element instead of using the rs: prefix, and is
// several times slower. The first error, an invalid character, sticks; later writes still
// append so that the caller checks once per entry.
type xmlBuf struct {
	b   []byte
	err error
}

func (x *xmlBuf) reset() { x.b, x.err = x.b[:0], nil }

func (x *xmlBuf) raw(s string) { x.b = append(x.b, s...) }

// element writes <name>text</name>, or nothing for an empty text.
func (x *xmlBuf) element(name, text string) {
	if text == "" {
		return
	}
	x.b = append(append(append(x.b, '<'), name...), '>')
	x.escape(name, "", text)
	x.b = append(append(append(x.b, "</"...), name...), '>')
}

// timeElement writes <name>datetime</name>, or nothing for a zero time.
func (x *xmlBuf) timeElement(name string, t time.Time) {
	if t.IsZero() {
		return
	}
	x.b = append(append(append(x.b, '<'), name...), '>')
	x.b = t.UTC().AppendFormat(x.b, time.RFC3339Nano)
	x.b = append(append(append(x.b, "</"...), name...), '>')
}

// attr writes name="value". Empty values are absent attributes and are not
// written. elem only names the element in an error.
func (x *xmlBuf) attr(elem, name, value string) {
	if value == "" {
		return
	}
	x.attrStart(name)
	x.escape(elem, name, value)
	x.b = append(x.b, '"')
}

// timeAttr writes a datetime attribute in the form FormatTime gives.
func (x *xmlBuf) timeAttr(name string, t time.Time) {
	if t.IsZero() {
		return
	}
	x.attrStart(name)
	x.b = t.UTC().AppendFormat(x.b, time.RFC3339Nano)
	x.b = append(x.b, '"')
}

func (x *xmlBuf) intAttr(name string, n int64) {
	x.attrStart(name)
	x.b = strconv.AppendInt(x.b, n, 10)
	x.b = append(x.b, '"')
}

func (x *xmlBuf) attrStart(name string) {
	x.b = append(append(append(x.b, ' '), name...), `="`...)
}

// escape appends s with the same escapes as xml.EscapeText, which suit both
// text and attribute values: tab, newline and carriage return become
// character references so that attribute-value normalization and line-end
// handling in the reader give back the same string. Unlike xml.EscapeText, a
// character XML cannot carry is an error rather than a silent U+FFFD: the
// string might be a path or a URI, and changing it would break round trips.
func (x *xmlBuf) escape(elem, attr, s string) {
	for i := 0; i < len(s); {
		// Most strings (URIs, hashes, media types) are printable ASCII
		// with nothing to escape: append such runs whole.
		j := i
		for j < len(s) && plainByte[s[j]] {
			j++
		}
		x.b = append(x.b, s[i:j]...)
		if i = j; i == len(s) {
			return
		}
		c := s[i]
		if c < utf8.RuneSelf {
			x.escapeByte(elem, attr, c)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || !isXMLChar(r) {
			x.fail(elem, attr, fmt.Sprintf("invalid UTF-8 or XML character at byte %d", i))
		}
		x.b = append(x.b, s[i:i+size]...)
		i += size
	}
}

// plainByte marks the bytes escape copies as they are: printable ASCII
// but for the five XML escapes.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = !strings.ContainsRune(`&<>"'`, rune(c))
	}
	return t
}()

func (x *xmlBuf) escapeByte(elem, attr string, c byte) {
	switch c {
	case '&':
		x.raw("&amp;")
	case '<':
		x.raw("&lt;")
	case '>':
		x.raw("&gt;")
	case '"':
		x.raw("&#34;")
	case '\'':
		x.raw("&#39;")
	case '\t':
		x.raw("&#x9;")
	case '\n':
		x.raw("&#xA;")
	case '\r':
		x.raw("&#xD;")
	default:
		if c < 0x20 {
			x.fail(elem, attr, fmt.Sprintf("control character %#02x is not allowed in XML", c))
		}
		x.b = append(x.b, c)
	}
}

func (x *xmlBuf) fail(elem, attr, msg string) {
	if x.err != nil {
		return
	}
	if attr != "" {
		x.err = fmt.Errorf("<%s> attribute %s: %s", elem, attr, msg)
	} else {
		x.err = fmt.Errorf("<%s>: %s", elem, msg)
	}
}

// isXMLChar reports whether r is in the Char production of XML 1.0 §2.2.
func isXMLChar(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D ||
		r >= 0x20 && r <= 0xD7FF ||
		r >= 0xE000 && r <= 0xFFFD ||
		r >= 0x10000 && r <= 0x10FFFF
}
