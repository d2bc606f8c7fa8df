package serve

import (
	"net/http"
	"path"

	"github.com/rsdump/rsdump/internal/safepath"
)

// serveResource serves a file of the resources directory at its path
// relative to the base URL. Names must pass safepath's rules and are
// opened through an os.Root, so that nothing outside the directory (by
// "..", an absolute path, or a symbolic link leading out) is reached, and
// nothing inside DIR, by whatever links (open).
func (h *handler) serveResource(w http.ResponseWriter, r *http.Request, rel string) {
	if safepath.Check(rel) != nil {
		http.NotFound(w, r)
		return
	}
	f, fi, err := open(h.res, rel, true, h.hide)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	w.Header().Set("ETag", fileETag(fi.Size(), fi.ModTime().UnixNano()))
	if l := h.capabilityLink(r); l != "" {
		w.Header().Set("Link", l)
	}
	http.ServeContent(w, r, path.Base(rel), fi.ModTime(), f) // typed by the name asked for
}
