package httpc

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// modelServer answers by what a path's name asks: chunk (chunked body),
// eof (a body until the connection ends), info (a 100 first), tell
// (Connection: close), drop (closes after the answer, saying nothing),
// 404, redir (to the path without it), big (a body of 20 KB).
func modelServer(t *testing.T) string {
	return rawListen(t, func(c net.Conn) {
		c.SetDeadline(time.Now().Add(20 * time.Second))
		br := bufio.NewReader(c)
		bw := bufio.NewWriter(c)
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			p := req.URL.Path
			has := func(s string) bool { return strings.Contains(p, s) }
			body := "body of " + p
			if has("big") {
				body += strings.Repeat("x", 20<<10)
			}
			status, hdr := "200 OK", ""
			if has("info") {
				fmt.Fprint(bw, "HTTP/1.1 100 Continue\r\n\r\n")
			}
			switch {
			case has("redir"):
				status, hdr, body = "302 Found", "Location: "+strings.Replace(p, "redir", "", 1)+"\r\n", ""
			case has("404"):
				status = "404 Not Found"
			}
			if has("tell") {
				hdr += "Connection: close\r\n"
			}
			switch {
			case has("eof"):
				fmt.Fprintf(bw, "HTTP/1.1 %s\r\n%s\r\n%s", status, hdr, body)
				bw.Flush()
				return
			case has("chunk"):
				fmt.Fprintf(bw, "HTTP/1.1 %s\r\n%sTransfer-Encoding: chunked\r\n\r\n", status, hdr)
				for b := body; b != ""; {
					n := min(len(b), 7)
					fmt.Fprintf(bw, "%x\r\n%s\r\n", n, b[:n])
					b = b[n:]
				}
				fmt.Fprint(bw, "0\r\n\r\n")
			default:
				fmt.Fprintf(bw, "HTTP/1.1 %s\r\n%sContent-Length: %d\r\n\r\n%s", status, hdr, len(body), body)
			}
			bw.Flush()
			if has("tell") || has("drop") {
				return
			}
		}
	})
}

// Any interleaving of Add and Next, skipped and unannounced URLs, bodies
// closed early (here or on another goroutine), and servers that close:
// every body is its own URL's.
func TestPipelineModel(t *testing.T) {
	base := modelServer(t)
	kinds := []string{"", "", "", "", "chunk", "eof", "info", "tell", "drop", "404", "redir", "big", "chunk-big", "info-chunk"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for seed := range int64(6) {
		rng := rand.New(rand.NewSource(seed))
		p := NewPipeline(leanClient(), 2+rng.Intn(7))
		var wg sync.WaitGroup
		n := 0
		for range 40 {
			var batch []string
			for range 1 + rng.Intn(9) {
				n++
				batch = append(batch, fmt.Sprintf("/%d%s", n, kinds[rng.Intn(len(kinds))]))
			}
			for _, q := range batch {
				p.Add(base + q)
			}
			for _, q := range batch {
				switch r := rng.Intn(20); {
				case r == 0:
					continue // skipped
				case r == 1:
					n++
					q = fmt.Sprintf("/%d", n) // never announced
				}
				rc, err := p.Next(ctx, base+q, 1<<20)
				want := "body of " + strings.Replace(q, "redir", "", 1)
				if strings.Contains(q, "big") {
					want += strings.Repeat("x", 20<<10)
				}
				if strings.Contains(q, "404") {
					if err == nil || !strings.Contains(err.Error(), "404") {
						t.Fatalf("seed %d %s: %v, want a 404", seed, q, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("seed %d %s: %v", seed, q, err)
				}
				switch r := rng.Intn(10); {
				case r == 0:
					rc.Close()
				case r == 1:
					b := make([]byte, 1+rng.Intn(len(want)))
					if _, err := io.ReadFull(rc, b); err != nil || string(b) != want[:len(b)] {
						t.Fatalf("seed %d %s: %q, %v", seed, q, b, err)
					}
					wg.Add(1)
					go func() { defer wg.Done(); rc.Close() }()
				default:
					b, err := io.ReadAll(rc)
					rc.Close()
					if err != nil || string(b) != want {
						t.Fatalf("seed %d %s: %.40q, %v", seed, q, b, err)
					}
				}
			}
		}
		wg.Wait()
		p.Close()
	}
}
