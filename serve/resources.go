package serve

import (
	"bytes"
	"io"
	"net/http"
	"path"
	"sync"
	"time"

	"github.com/rsdump/rsdump/internal/safepath"
)

// serveResource serves a file of the resources directory at its path
// relative to the base URL. Names must pass safepath's rules and are
// opened through an os.Root, so that nothing outside the directory (by
// "..", an absolute path, or a symbolic link leading out) is reached, and
// nothing inside DIR, by whatever links (open); a small file on a plain
// way, which cannot lead out, is read at once (readSmall).
func (h *handler) serveResource(w http.ResponseWriter, r *http.Request, rel string) {
	if safepath.Check(rel) != nil {
		http.NotFound(w, r)
		return
	}
	if h.resHidden {
		http.NotFound(w, r)
		return
	}
	name := path.Base(rel) // the type is the name asked for's
	bp := smallBufs.Get().(*[]byte)
	defer smallBufs.Put(bp)
	if b, size, mtime, ok := readSmall(h.resDir, h.dirs, rel, h.hide, *bp); ok {
		h.resourceHeaders(w, r, size, mtime)
		http.ServeContent(writerOnly{w}, r, name, mtime, bytes.NewReader(b))
		return
	}
	f, fi, err := open(h.res, rel, true, h.hide)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	h.resourceHeaders(w, r, fi.Size(), fi.ModTime())
	if fi.Size() <= smallResource {
		b := (*bp)[:fi.Size()]
		if _, err := io.ReadFull(f, b); err == nil {
			http.ServeContent(writerOnly{w}, r, name, fi.ModTime(), bytes.NewReader(b))
			return
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			http.NotFound(w, r)
			return
		}
	}
	http.ServeContent(w, r, name, fi.ModTime(), f)
}

// resourceHeaders sets a resource's ETag and its link to the Capability
// List.
func (h *handler) resourceHeaders(w http.ResponseWriter, r *http.Request, size int64, mtime time.Time) {
	w.Header().Set("ETag", fileETag(size, mtime.UnixNano()))
	if l := h.resourceLink(r); l != "" {
		w.Header().Set("Link", l)
	}
}

// smallResource is the size up to which a resource is read whole, once,
// and written with its header in one write: for the small files a list's
// resources often are, handing the file to the connection (a read of its
// first 512 bytes, a write of the header with them, a sendfile of the
// rest) cost three system calls where two do. A file that shrank since
// its size was taken is served as a larger one is.
const smallResource = 16 << 10

var smallBufs = sync.Pool{New: func() any { b := make([]byte, smallResource); return &b }}

// writerOnly hides a ResponseWriter's io.ReaderFrom (the recorder's, the
// connection's sendfile), so that a body held in memory goes out with
// the header in one write.
type writerOnly struct{ http.ResponseWriter }
