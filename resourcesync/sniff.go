package resourcesync

import (
	"bytes"
	"strings"
)

// LooksXML reports whether the first bytes of a response or file, head,
// may start an XML document: a "<" after an optional byte order mark and
// white space. Discovery (replica) and get tell documents from other
// answers by it.
func LooksXML(head []byte) bool {
	head = bytes.TrimLeft(bytes.TrimPrefix(head, []byte("\xef\xbb\xbf")), " \t\r\n")
	return bytes.HasPrefix(head, []byte("<"))
}

// LooksHTML reports whether a response is an HTML page, by its
// Content-Type or, whatever that says, by its first bytes, head: a page
// where a document was expected, such as the one rsdump serve answers at
// a dump's directory, whose <link rel="resourcesync"> (§6.3.3) leads on.
func LooksHTML(head []byte, contentType string) bool {
	if ct := strings.ToLower(contentType); strings.HasPrefix(ct, "text/html") || strings.HasPrefix(ct, "application/xhtml") {
		return true
	}
	low := bytes.ToLower(head)
	return bytes.Contains(low, []byte("<!doctype html")) || bytes.Contains(low, []byte("<html"))
}
