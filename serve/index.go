package serve

import (
	"html/template"
	"net/http"

	"github.com/rsdump/rsdump/layout"
)

// indexPage is what the directory's own URL answers: a page a person can
// read and a Destination can discover the Source from (§6.3.3, an HTML
// <link rel="resourcesync"> to the Capability List), listing the documents
// that are there.
var indexPage = template.Must(template.New("index").Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>ResourceSync Source</title>
{{if .CapabilityList}}<link rel="resourcesync" href="{{.CapabilityList}}">
{{end}}</head><body>
<h1>ResourceSync Source</h1>
<ul>
{{range .Docs}}<li><a href="{{.}}">{{.}}</a></li>
{{end}}</ul>
</body></html>
`))

// indexDocs are the documents the page links to, when present.
var indexDocs = []string{
	layout.CapabilityListName, layout.ResourceListName, layout.DumpName, layout.ChangeListName, layout.ChangeDumpName,
}

func (h *handler) serveIndex(w http.ResponseWriter, r *http.Request) {
	var page struct {
		CapabilityList string
		Docs           []string
	}
	for _, name := range indexDocs {
		if isFile(h.dir, name) {
			page.Docs = append(page.Docs, name)
		}
	}
	if isFile(h.dir, layout.CapabilityListName) {
		page.CapabilityList = h.selfURL(r) + layout.CapabilityListName
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if l := h.capabilityLink(r); l != "" {
		w.Header().Set("Link", l)
	}
	if r.Method == http.MethodHead {
		return
	}
	indexPage.Execute(w, page)
}
