package verify

import (
	"os"

	"github.com/rsdump/rsdump/resourcesync"
)

// meter counts one package's share of Options.Progress in package bytes,
// so that the bytes reported add up to the totals given to
// Options.Total: each bitstream's compressed size as it is read, and the
// rest (headers, manifest, central directory; a package missing or
// refused) when the package is done.
type meter struct {
	progress func(int64)
	want     int64 // bytes announced for the package; -1 until known
	got      int64
}

// plannedSize is what a package will count toward the total: the length
// the dump document gives, or a local file's size; -1 when only opening
// the package will tell.
func plannedSize(ref PackageRef) int64 {
	if ref.Length >= 0 {
		return ref.Length
	}
	if !resourcesync.IsURL(ref.Loc) {
		if fi, err := os.Stat(ref.Loc); err == nil && fi.Mode().IsRegular() {
			return fi.Size()
		}
	}
	return -1
}

// announce gives Options.Total the bytes of the packages known up front.
func (v *verifier) announce(refs []PackageRef) {
	var n int64
	for _, r := range refs {
		n += max(plannedSize(r), 0)
	}
	if v.opts.Total != nil && n > 0 {
		v.opts.Total(n)
	}
}

func (v *verifier) meter(ref PackageRef) *meter {
	return &meter{progress: v.opts.Progress, want: plannedSize(ref)}
}

// opened learns the size of a package that was not announced.
func (m *meter) opened(size int64, total func(int64)) {
	if m.want < 0 {
		m.want = size
		if total != nil {
			total(size)
		}
	}
}

// add counts n bytes, never more than the package's announced size.
func (m *meter) add(n int64) {
	if m.want >= 0 {
		n = min(n, m.want-m.got)
	}
	if m.progress != nil && n > 0 {
		m.progress(n)
		m.got += n
	}
}

// finish reports the package's bytes not yet counted.
func (m *meter) finish() { m.add(m.want - m.got) }
