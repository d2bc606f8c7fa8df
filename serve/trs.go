package serve

import (
	"io/fs"
	"net/http"
	"os"

	"github.com/rsdump/rsdump/layout"
	"github.com/rsdump/rsdump/trs"
)

// TRSName is where Options.TRS is served, under the dump URL's path.
const TRSName = "trs"

// mountTRS makes the Tracked Resource Set handler over the directory's
// documents: only names pack writes, only regular files (open), its URL
// on the dump URL (or the request's host), and every response linking
// the Capability List as rel="resourcesync", so that a client finds the
// ResourceSync documents (and their hashes) behind the view.
func (h *handler) mountTRS(o trs.Options) error {
	o.Open = func(name string) (*os.File, os.FileInfo, error) {
		if !layout.IsOutput(name) {
			return nil, nil, &os.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
		}
		return open(h.dir, name, false, nil)
	}
	o.Path = h.dumpPath + TRSName
	o.URL = func(r *http.Request) string { return h.selfURL(r) + TRSName }
	o.Link = h.capabilityLink
	t, err := trs.New(o)
	if err != nil {
		return err
	}
	h.trs = t
	return nil
}
