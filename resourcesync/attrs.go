package resourcesync

import (
	"encoding/xml"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// The attributes the decoder knows, by local name, each with the function
// that stores its value. Attribute values are taken as they are: XML
// whitespace around a value is an error, not something to trim, so that
// what was hashed or compared is what the document says. Attributes not
// listed here (including the rs:md "modified" of the 0.9.1 schema) and
// attributes in any namespace are ignored, as the schema allows foreign
// attributes.
var mdAttrs = attrTable[MD]{
	{"capability", func(m *MD, v string) error { m.Capability = v; return nil }},
	{"at", func(m *MD, v string) error { return setTime(&m.At, v) }},
	{"completed", func(m *MD, v string) error { return setTime(&m.Completed, v) }},
	{"from", func(m *MD, v string) error { return setTime(&m.From, v) }},
	{"until", func(m *MD, v string) error { return setTime(&m.Until, v) }},
	{"datetime", func(m *MD, v string) error { return setTime(&m.Datetime, v) }},
	{"change", func(m *MD, v string) error { m.Change = v; return nil }},
	{"hash", func(m *MD, v string) error { m.Hash = v; return nil }},
	{"length", func(m *MD, v string) error { return setLength(&m.Length, v) }},
	{"type", func(m *MD, v string) error { m.Type = v; return nil }},
	{"encoding", func(m *MD, v string) error { m.Encoding = v; return nil }},
	{"path", func(m *MD, v string) error { m.Path = v; return nil }},
}

var linkAttrs = attrTable[Link]{
	{"rel", func(l *Link, v string) error { l.Rel = v; return nil }},
	{"href", func(l *Link, v string) error { l.Href = v; return nil }},
	{"pri", func(l *Link, v string) error { return setPri(&l.Pri, v) }},
	{"hash", func(l *Link, v string) error { l.Hash = v; return nil }},
	{"length", func(l *Link, v string) error { return setLength(&l.Length, v) }},
	{"modified", func(l *Link, v string) error { return setTime(&l.Modified, v) }},
	{"type", func(l *Link, v string) error { l.Type = v; return nil }},
	{"encoding", func(l *Link, v string) error { l.Encoding = v; return nil }},
	{"path", func(l *Link, v string) error { l.Path = v; return nil }},
}

// attrTable lists the attributes of an element with the function that
// stores each. A slice rather than a map: its index gives a bit for
// catching repeated attributes, which encoding/xml lets through although
// XML forbids them, and a scan of a dozen names costs no more than a lookup.
type attrTable[T any] []struct {
	name string
	set  func(*T, string) error
}

// setAttrs stores the known attributes of start into dst. The error names
// the element and the attribute; the caller adds the line.
func setAttrs[T any](dst *T, start xml.StartElement, table attrTable[T]) error {
	var seen uint32
	for _, a := range start.Attr {
		i := table.index(a.Name)
		if i < 0 {
			continue
		}
		if seen&(1<<i) != 0 {
			return fmt.Errorf("<rs:%s> attribute %s: repeated", start.Name.Local, a.Name.Local)
		}
		seen |= 1 << i
		if err := table[i].set(dst, a.Value); err != nil {
			return fmt.Errorf("<rs:%s> attribute %s: %w", start.Name.Local, a.Name.Local, err)
		}
	}
	return nil
}

// index returns the position of an unqualified attribute name, or -1.
func (t attrTable[T]) index(n xml.Name) int {
	if n.Space != "" {
		return -1
	}
	for i := range t {
		if t[i].name == n.Local {
			return i
		}
	}
	return -1
}

func setTime(t *time.Time, v string) (err error) {
	*t, err = ParseTime(v)
	return err
}

// setLength accepts what xsd:integer accepts, except a leading '+'. A
// negative value is kept so that validation can report it.
func setLength(n **int64, v string) error {
	i, err := parseInt(v, 64)
	if err != nil {
		return err
	}
	*n = &i
	return nil
}

// setPri rejects values outside 1..999,999 here rather than in validation:
// the model cannot carry pri="0", which would read back as "absent".
func setPri(p *int, v string) error {
	i, err := parseInt(v, 32)
	if err != nil {
		return err
	}
	if i < 1 || i > 999999 {
		return fmt.Errorf("%d is not in 1..999999", i)
	}
	*p = int(i)
	return nil
}

var errNotInteger = errors.New("not an integer")

// parseInt is strconv.ParseInt in base 10 without its tolerance for a
// leading '+'.
func parseInt(v string, bits int) (int64, error) {
	i, err := strconv.ParseInt(v, 10, bits)
	var ne *strconv.NumError
	switch {
	case v != "" && v[0] == '+', errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrSyntax):
		return 0, fmt.Errorf("%q is %w", v, errNotInteger)
	case err != nil:
		return 0, fmt.Errorf("%q is out of range", v)
	}
	return i, nil
}
