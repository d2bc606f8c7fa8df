package pack

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rsdump/rsdump/internal/sharedtest"
	"github.com/rsdump/rsdump/internal/sink"
	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/resourcesync"
)

// loopbackOptions name 127.0.0.1 only: the resync peer reads these
// documents and may follow their links.
func loopbackOptions() Options {
	o := testOptions()
	o.BaseURL = "http://127.0.0.1:9/rs/"
	o.DumpURL = "http://127.0.0.1:9/dump/"
	return o
}

func readDoc(t *testing.T, path string) (resourcesync.Header, []resourcesync.URL) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return decodeAll(t, f)
}

// TestResourceListFromPack: a full pack writes resourcelist.xml with every
// bitstream its manifests list, hashes included and path left out, and a
// Capability List naming the Resource List and the Resource Dump; every
// document validates and links up as §9-§11 require.
func TestResourceListFromPack(t *testing.T) {
	t.Parallel()
	o := loopbackOptions()
	o.MaxPackageSize = 8 << 10 // several packages
	res, out := mustPack(t, copyExample(t), o)
	if len(res.Packages) < 2 {
		t.Fatalf("%d packages, want several", len(res.Packages))
	}
	var want []resourcesync.URL
	for _, p := range res.Packages {
		_, m := readDoc(t, filepath.Join(out, p.Manifest))
		for _, u := range m {
			want = append(want, listEntry(u))
		}
	}
	h, got := readDoc(t, filepath.Join(out, layout.ResourceListName))
	if h.MD.Capability != resourcesync.CapResourceList || !h.MD.At.Equal(fixedTime) || h.MD.Completed.IsZero() {
		t.Errorf("header %+v", h.MD)
	}
	if len(got) != res.Bitstreams || !equalEntries(got, want) {
		t.Errorf("resource list has %d entries, want the manifests' %d:\n%v\n%v", len(got), res.Bitstreams, got, want)
	}
	for _, u := range got {
		if u.MD.Path != "" || !strings.Contains(u.MD.Hash, "sha-256:") {
			t.Errorf("%s: path %q hash %q", u.Loc, u.MD.Path, u.MD.Hash)
		}
	}
	if up := linkHref(h, "up"); up != o.DumpURL+layout.CapabilityListName {
		t.Errorf("rel=up %q", up)
	}
	ch, caps := readDoc(t, filepath.Join(out, layout.CapabilityListName))
	if ch.MD.Capability != resourcesync.CapCapabilityList || linkHref(ch, "up") != "http://127.0.0.1:9/.well-known/resourcesync" {
		t.Errorf("capability list header %+v", ch)
	}
	if got := capNames(caps); !slices.Equal(got, []string{"resourcelist " + o.DumpURL + layout.ResourceListName, "resourcedump " + o.DumpURL + layout.DumpName}) {
		t.Errorf("capability list names %q", got)
	}
	dh, _ := readDoc(t, filepath.Join(out, layout.DumpName))
	if linkHref(dh, "up") != o.DumpURL+layout.CapabilityListName {
		t.Errorf("resource dump rel=up %q", linkHref(dh, "up"))
	}
	for _, name := range []string{layout.ResourceListName, layout.CapabilityListName, layout.DumpName, res.Packages[0].Manifest} {
		xmllint(t, filepath.Join(out, name), urlsetSchema)
	}
	if left, _ := filepath.Glob(filepath.Join(out, ".*.tmp")); len(left) > 0 {
		t.Errorf("scratch files left: %q", left)
	}
}

func equalEntries(a, b []resourcesync.URL) bool {
	return slices.EqualFunc(a, b, func(x, y resourcesync.URL) bool {
		return x.Loc == y.Loc && x.Lastmod.Equal(y.Lastmod) && *x.MD.Length == *y.MD.Length &&
			x.MD.Hash == y.MD.Hash && x.MD.Type == y.MD.Type
	})
}

func linkHref(h resourcesync.Header, rel string) string {
	for _, l := range h.Links {
		if l.Rel == rel {
			return l.Href
		}
	}
	return ""
}

func capNames(urls []resourcesync.URL) []string {
	var s []string
	for _, u := range urls {
		s = append(s, u.MD.Capability+" "+u.Loc)
	}
	return s
}

// TestListIndex: past 50,000 entries a list becomes an index over parts
// that link to it, with the parts' times; a Change List's parts cover
// consecutive intervals. Each validates against its schema.
func TestListIndex(t *testing.T) {
	t.Parallel()
	for _, capability := range []string{resourcesync.CapResourceList, resourcesync.CapChangeList} {
		t.Run(capability, func(t *testing.T) {
			o := loopbackOptions()
			if err := o.setDefaults(); err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			name := capability + ".xml"
			l := newListWriter(&o, dirOutput(t, dir), capability, name)
			n := resourcesync.MaxEntries + 2
			for i := range n {
				u := resourcesync.URL{Loc: fmt.Sprintf("%sf%06d", o.BaseURL, i), Lastmod: fixedTime.Add(time.Duration(i) * time.Second),
					MD: &resourcesync.MD{Length: resourcesync.Int64(1), Hash: "md5:0cc175b9c0f1b6a831c399e269772661"}}
				if capability == resourcesync.CapChangeList { // changed in order, resources modified in reverse
					u.MD.Change, u.MD.Datetime = resourcesync.ChangeUpdated, u.Lastmod
					u.Lastmod = fixedTime.Add(-time.Duration(i) * time.Second)
				}
				if err := l.add(u); err != nil {
					t.Fatal(err)
				}
			}
			md := resourcesync.MD{At: fixedTime, Completed: fixedTime.Add(time.Hour)}
			if capability == resourcesync.CapChangeList {
				md = resourcesync.MD{From: fixedTime.Add(-time.Hour), Until: fixedTime.Add(100 * time.Hour)}
			}
			if err := l.commit(md); err != nil {
				t.Fatal(err)
			}
			h, parts := readDoc(t, filepath.Join(dir, name))
			if h.Kind != resourcesync.SitemapIndex || len(parts) != 2 || h.MD.Capability != capability {
				t.Fatalf("index %+v with %d parts", h, len(parts))
			}
			xmllint(t, filepath.Join(dir, name), sitemapIndexSchema)
			total := 0
			for i, p := range parts {
				part := filepath.Join(dir, listPartName(name, i+1))
				if p.Loc != o.DumpURL+filepath.Base(part) {
					t.Errorf("part %d loc %s", i+1, p.Loc)
				}
				ph, entries := readDoc(t, part)
				total += len(entries)
				if linkHref(ph, "index") != o.DumpURL+name || linkHref(ph, "up") != o.CapabilityList {
					t.Errorf("part %d links %+v", i+1, ph.Links)
				}
				if capability == resourcesync.CapChangeList {
					wantFrom, wantUntil := md.From, entries[len(entries)-1].MD.Datetime
					if i > 0 {
						wantFrom = parts[i-1].MD.Until
					}
					if i == len(parts)-1 {
						wantUntil = md.Until
					}
					if !ph.MD.From.Equal(wantFrom) || !ph.MD.Until.Equal(wantUntil) || !p.MD.From.Equal(wantFrom) {
						t.Errorf("part %d covers %s..%s, want %s..%s", i+1, ph.MD.From, ph.MD.Until, wantFrom, wantUntil)
					}
				} else if !ph.MD.At.Equal(md.At) || !p.MD.Completed.Equal(md.Completed) {
					t.Errorf("part %d times %+v %+v", i+1, ph.MD, p.MD)
				}
				xmllint(t, part, urlsetSchema)
			}
			if total != n {
				t.Errorf("parts hold %d entries, want %d", total, n)
			}
			if !slices.Equal(l.written, []string{listPartName(name, 1), listPartName(name, 2), name}) {
				t.Errorf("written %q", l.written)
			}
		})
	}
}

// TestSourceDescription: --source-description writes the well-known
// document naming this output's Capability List, keeps the Capability
// Lists of other sets already named there, and refuses to replace a file
// that is not a Source Description.
func TestSourceDescription(t *testing.T) {
	t.Parallel()
	o := loopbackOptions()
	o.SourceDescription, o.DescribedBy = true, "http://127.0.0.1:9/about.html"
	src, out := copyExample(t), t.TempDir()
	sd := filepath.Join(out, filepath.FromSlash(layout.SourceDescriptionName))
	os.MkdirAll(filepath.Dir(sd), 0o755)
	other := `<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/">
<rs:md capability="description"/>
<url><loc>http://127.0.0.1:9/other/capabilitylist.xml</loc><rs:md capability="capabilitylist"/></url>
<url><loc>http://127.0.0.1:9/dump/capabilitylist.xml</loc><rs:md capability="capabilitylist"/></url>
</urlset>
`
	os.WriteFile(sd, []byte(other), 0o644)
	if _, err := Pack(context.Background(), src, out, o); err != nil {
		t.Fatal(err)
	}
	h, urls := readDoc(t, sd)
	if h.MD.Capability != resourcesync.CapDescription || linkHref(h, "describedby") != o.DescribedBy {
		t.Errorf("header %+v", h)
	}
	if got := capNames(urls); !slices.Equal(got, []string{"capabilitylist http://127.0.0.1:9/other/capabilitylist.xml", "capabilitylist http://127.0.0.1:9/dump/capabilitylist.xml"}) {
		t.Errorf("source description names %q", got)
	}
	ch, _ := readDoc(t, filepath.Join(out, layout.CapabilityListName))
	if linkHref(ch, "describedby") != o.DescribedBy {
		t.Errorf("capability list links %+v", ch.Links)
	}
	xmllint(t, sd, urlsetSchema)

	os.WriteFile(sd, []byte(strings.Replace(other, `capability="description"`, `capability="resourcelist"`, 1)), 0o644)
	_, err := Pack(context.Background(), src, t.TempDir()+"/x", o) // another output: its own well-known file
	if err != nil {
		t.Fatal(err)
	}
	_, err = Pack(context.Background(), src, out, o)
	if err == nil || !strings.Contains(err.Error(), "not a Source Description") || !strings.Contains(err.Error(), "resourcesync") {
		t.Errorf("a resource list at the well-known URI: %v, want an error naming it", err)
	}
}

// TestResyncReadsOurDocuments: resync's own parser reads every document a
// pack writes.
func TestResyncReadsOurDocuments(t *testing.T) {
	t.Parallel()
	peer := sharedtest.NewResync(t)
	o := loopbackOptions()
	o.SourceDescription = true
	_, out := mustPack(t, copyExample(t), o)
	docs := map[string]string{
		layout.ResourceListName: "resourcelist 9", layout.CapabilityListName: "capabilitylist 2", layout.DumpName: "resourcedump 1",
		"resourcedump-00001.manifest.xml": "resourcedump-manifest 9", layout.SourceDescriptionName: "description 1",
	}
	for name, want := range docs {
		path := filepath.Join(out, filepath.FromSlash(name))
		outp, err := peer.Run(context.Background(), t.TempDir(), "resync-sync", "--parse", "--sitemap", path)
		capability, n, _ := strings.Cut(want, " ")
		if err != nil || !strings.Contains(outp, "Parsed "+capability+" document with "+n+" entries") {
			t.Errorf("resync --parse %s: %v\n%s", name, err, outp)
		}
	}
}

// TestListWriteInPlace: a Resource List of several parts written in
// place (writeInPlace: the parts go into their documents as the entries
// come, beside the run) is byte for byte the list commit writes from
// scratch files; before commit its parts are there under temporary names
// only, and an aborted one leaves nothing.
func TestListWriteInPlace(t *testing.T) {
	t.Parallel()
	o := chgOptions(1)
	o.setDefaults()
	md := resourcesync.MD{At: hour(1), Completed: hour(1).Add(time.Second)}
	write := func(inPlace, several, commit bool) (string, []listDoc) {
		dir := t.TempDir()
		out, err := openOutput(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		l := newListWriter(&o, out, resourcesync.CapResourceList, layout.ResourceListName)
		if inPlace {
			l.writeInPlace(md, several)
		}
		n := int64(3)
		for i := range resourcesync.MaxEntries + 10 {
			u := resourcesync.URL{Loc: fmt.Sprintf("%sd/f%06d", o.BaseURL, i), Lastmod: hour(0), MD: &resourcesync.MD{Length: &n, Hash: "md5:00"}}
			if err := l.add(u); err != nil {
				t.Fatal(err)
			}
		}
		docs, err := l.bodies()
		if err != nil {
			t.Fatal(err)
		}
		if names, _ := filepath.Glob(filepath.Join(dir, "resourcelist*.xml")); len(names) > 0 {
			t.Errorf("in place %v: %v before commit", inPlace, names)
		}
		if inPlace {
			// The last part's, at least: the first may still be copied.
			if tmps, _ := filepath.Glob(filepath.Join(dir, ".resourcelist-part00002.xml*.tmp")); len(tmps) != 1 {
				t.Errorf("in place: the second part's document before commit %v, want it", tmps)
			}
			// Known to have several: the first part had no scratch file.
			if bodies, _ := filepath.Glob(filepath.Join(dir, ".resourcelist.xml.body*.tmp")); several != (len(bodies) == 0) {
				t.Errorf("in place, several %v: scratch files %v", several, bodies)
			}
		}
		if !commit {
			l.abort()
			if left, _ := os.ReadDir(dir); len(left) > 0 {
				t.Errorf("in place %v: an aborted list left %v", inPlace, left)
			}
			return dir, docs
		}
		if err := l.commit(md); err != nil {
			t.Fatal(err)
		}
		return dir, docs
	}
	want, wantDocs := write(false, false, true)
	for _, several := range []bool{false, true} {
		got, gotDocs := write(true, several, true)
		if fmt.Sprint(gotDocs) != fmt.Sprint(wantDocs) || len(gotDocs) != 2 {
			t.Errorf("several %v: bodies %+v, want %+v, of two parts", several, gotDocs, wantDocs)
		}
		sameOutput(t, fmt.Sprintf("in place, several %v", several), want, got)
		for i := range 2 {
			if b := readFile(t, filepath.Join(got, listPartName(layout.ResourceListName, i+1))); !bytes.HasPrefix(b, []byte("<?xml")) || !bytes.HasSuffix(b, []byte("</urlset>\n")) {
				t.Errorf("several %v: part %d written in place: %.100q...", several, i+1, b)
			}
		}
		write(true, several, false)
	}
}

// failCreate is a sink whose Create of one name fails.
type failCreate struct {
	sink.Sink
	name string
}

func (f failCreate) Create(ctx context.Context, name string) (sink.File, error) {
	if name == f.name {
		return nil, fmt.Errorf("%s: no space left", name)
	}
	return f.Sink.Create(ctx, name)
}

// TestListWriteInPlaceFails: a part written in place whose document
// could not be written (here the first, copied from its scratch file
// once the second starts, which the entries' writer does not see) fails
// commit, which returns the error, and leaves no document.
func TestListWriteInPlaceFails(t *testing.T) {
	t.Parallel()
	o := chgOptions(1)
	o.setDefaults()
	md := resourcesync.MD{At: hour(1), Completed: hour(1).Add(time.Second)}
	dir := t.TempDir()
	out, err := openOutput(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	out.Sink = failCreate{Sink: out.Sink, name: listPartName(layout.ResourceListName, 1)}
	l := newListWriter(&o, out, resourcesync.CapResourceList, layout.ResourceListName)
	l.writeInPlace(md, false)
	n := int64(3)
	for i := range resourcesync.MaxEntries + 10 {
		u := resourcesync.URL{Loc: fmt.Sprintf("%sd/f%06d", o.BaseURL, i), Lastmod: hour(0), MD: &resourcesync.MD{Length: &n, Hash: "md5:00"}}
		if err := l.add(u); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- l.commit(md) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "no space left") {
			t.Errorf("commit: %v, want the first part's error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("commit still running after 10 s: it waits on a part already waited for")
	}
	if names, _ := filepath.Glob(filepath.Join(dir, "resourcelist*.xml")); len(names) > 0 {
		t.Errorf("a failed list left %v", names)
	}
}

// TestChunkPipe: a part's body goes to its document's goroutine through
// chunkPipe, whose writes return before the reader takes them (io.Pipe's
// waited for the reader: the encoder and the document's writing took
// turns), up to pipeChunks of them; the reader gets them in order, then
// the writer's error; a reader that ended fails the writes, and wait
// returns once every chunk is taken or the reader ended.
func TestChunkPipe(t *testing.T) {
	t.Parallel()
	p := newChunkPipe()
	wrote := make(chan error, 1)
	go func() {
		for i := range pipeChunks {
			if _, err := fmt.Fprintf(p, "chunk %d;", i); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- nil
	}()
	select {
	case err := <-wrote:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%d writes with no reader did not return", pipeChunks)
	}
	p.CloseWithError(errMarker)
	var got bytes.Buffer
	if _, err := p.WriteTo(&got); err != errMarker {
		t.Errorf("WriteTo: %v, want the writer's error", err)
	}
	want := ""
	for i := range pipeChunks {
		want += fmt.Sprintf("chunk %d;", i)
	}
	if got.String() != want {
		t.Errorf("read %q, want %q", got.String(), want)
	}
	p.wait() // every chunk taken

	p = newChunkPipe()
	p.closeRead(errMarker)
	p.wait() // the reader ended
	for range pipeChunks + 1 {
		if _, err := p.Write([]byte("x")); err != errMarker {
			t.Fatalf("Write after the reader failed: %v, want its error", err)
		}
	}
}

var errMarker = fmt.Errorf("marker")
