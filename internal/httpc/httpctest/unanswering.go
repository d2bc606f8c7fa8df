package httpctest

import (
	"strings"
	"testing"
	"time"
)

// ShortWait is the stall and header timeout of the tests of servers that
// never answer.
const ShortWait = 300 * time.Millisecond

// StalledDoc starts like a dump document; the stalling server of
// Unanswering stops after its first 300 bytes, in the middle of the
// comments.
var StalledDoc = []byte(`<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
` + strings.Repeat("<!-- padding -->\n", 100))

// Unanswering returns the base URLs of a server on 127.0.0.1 that accepts
// and never answers, and of one that sends headers and then stalls the
// body of StalledDoc.
func Unanswering(t testing.TB) map[string]string {
	return UnansweringData(t, StalledDoc, 300)
}

// UnansweringData is Unanswering with the stalling server serving data
// (honouring a Range header) and stalling at offset after, keyed "silent"
// and "stalled".
func UnansweringData(t testing.TB, data []byte, after int64) map[string]string {
	t.Helper()
	return map[string]string{
		"silent":  Silent(t),
		"stalled": Stalling(t, data, after).URL,
	}
}
