package transfer

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"time"

	"github.com/rsdump/rsdump/internal/httpc"
	"github.com/rsdump/rsdump/s3"
)

// healthWindow is how many recent verified pieces judge a mirror's data.
const healthWindow = 16

// mirror is one URL's standing for one file. The download's mutex guards
// every field.
type mirror struct {
	idx      int
	url      string
	host     string // host:port, the unit of the connection limits
	stat     *hostStat
	rank     int // position by preference and priority, 0 is best
	active   int
	rate     float64 // bytes/s of one connection, moving average; 0 = unmeasured
	fails    int     // consecutive failures
	notUntil time.Time
	dropped  string
	noRange  string             // why it takes no range requests (it answered one with the whole file); not dropped
	recent   [healthWindow]bool // true = bad piece
	nRecent  int
	bytes    int64 // verified bytes served
	bad      int
	pace     httpc.Pace // what it delivered for the file in the current window; read without the download's mutex
}

func newMirrors(f File, locs []string) ([]*mirror, error) {
	ms := slices.Clone(f.Mirrors)
	slices.SortStableFunc(ms, func(a, b Mirror) int { return mirrorOrder(a, b, locs) })
	var out []*mirror
	seen := map[string]bool{}
	for _, m := range ms {
		host, err := hostKey(m.URL)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Name, err)
		}
		if seen[m.URL] {
			continue
		}
		seen[m.URL] = true
		out = append(out, &mirror{idx: len(out), url: m.URL, host: host, rank: len(out)})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no http, https or s3 mirror", f.Name)
	}
	return out, nil
}

// mirrorOrder puts preferred servers first, then preferred locations, then
// lower priority values (RFC 5854 §4.2.16.1, RFC 6249 §3).
func mirrorOrder(a, b Mirror, locs []string) int {
	if a.Pref != b.Pref {
		if a.Pref {
			return -1
		}
		return 1
	}
	la, lb := locRank(a.Location, locs), locRank(b.Location, locs)
	if la != lb {
		return la - lb
	}
	return effPri(a.Priority) - effPri(b.Priority)
}

func locRank(loc string, locs []string) int {
	for i, l := range locs {
		if l != "" && equalFold(l, loc) {
			return i
		}
	}
	return len(locs)
}

func effPri(p int) int {
	if p <= 0 {
		return 999999
	}
	return p
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range len(a) {
		if a[i]|0x20 != b[i]|0x20 {
			return false
		}
	}
	return true
}

// hostKey is the host:port a URL connects to.
func hostKey(raw string) (string, error) {
	if s3.IsURL(raw) {
		// One bucket's objects are served by one endpoint; its address
		// is the SDK's to resolve.
		bucket, _, err := s3.Split(raw)
		return "s3:" + bucket, err
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("unusable mirror url %q", raw)
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return net.JoinHostPort(u.Hostname(), port), nil
}

// alive: the mirror may be sent range requests. A mirror without Range
// support is not alive but not dropped either: it is kept for one
// whole-file connection (streamCandidate).
func (m *mirror) alive() bool { return m.dropped == "" && m.noRange == "" }

func (m *mirror) ready(now time.Time) bool { return m.alive() && !now.Before(m.notUntil) }

// errRate is the share of bad pieces among the recent ones.
func (m *mirror) errRate() float64 {
	if m.nRecent == 0 {
		return 0
	}
	n := min(m.nRecent, healthWindow)
	bad := 0
	for _, b := range m.recent[:n] {
		if b {
			bad++
		}
	}
	return float64(bad) / float64(n)
}

func (m *mirror) record(bad bool) {
	m.recent[m.nRecent%healthWindow] = bad
	m.nRecent++
}

// mostlyBad: most of what the mirror served lately failed its hash, so its
// good pieces are not worth the refetches of its bad ones.
func (m *mirror) mostlyBad() bool {
	return m.nRecent >= 4 && m.errRate() > 0.5
}

// limit is the mirror's connection cap, cut in proportion to its error
// rate: a mirror with a few bad blocks keeps contributing.
func (m *mirror) limit(perMirror int) int {
	return max(1, int(float64(perMirror)*(1-m.errRate())+0.5))
}

// score orders mirrors for a free connection: unmeasured mirrors first (in
// preference order) so that each is tried, then by measured speed
// discounted by error rate.
func (m *mirror) score() float64 {
	if m.rate == 0 {
		return 1e18 - float64(m.rank)
	}
	return m.rate * (1 - m.errRate())
}

func (m *mirror) observe(n int64, d time.Duration) {
	if d <= 0 {
		d = time.Microsecond
	}
	r := float64(n) / d.Seconds()
	if m.rate == 0 {
		m.rate = r
		return
	}
	m.rate = 0.7*m.rate + 0.3*r
}

// checkPace adds n bytes received at now to m's window (httpc.Pace) and,
// once the window is MinSpeedWindow long, judges it: a mirror below
// MinSpeed is dropped for the file and every copy it serves is cancelled.
func (d *download) checkPace(m *mirror, n int, now int64) error {
	o := &d.g.opts
	if o.MinSpeed < 0 {
		return nil
	}
	err := m.pace.Add(m.url, n, now, o.MinSpeed, o.MinSpeedWindow)
	if err == nil {
		return nil
	}
	d.tooSlow(m, err)
	return err
}
