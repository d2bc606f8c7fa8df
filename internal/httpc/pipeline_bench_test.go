package httpc

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// cannedServer answers every GET on loopback with the same response of
// a 2 KB body and the header fields rsdump serve --resources sends,
// finding each request by its blank line only, so that a benchmark
// measures the client, not the server.
func cannedServer(b *testing.B) string {
	b.Helper()
	body := strings.Repeat("x", 2048)
	resp := []byte(fmt.Sprintf("HTTP/1.1 200 OK\r\nAccept-Ranges: bytes\r\nContent-Length: %d\r\n"+
		"Content-Type: application/octet-stream\r\nEtag: \"800-18a2b3c4d5e6f700\"\r\n"+
		"Last-Modified: Fri, 27 Nov 2026 22:00:00 GMT\r\nDate: Fri, 27 Nov 2026 22:30:00 GMT\r\n\r\n%s", len(body), body))
	return rawListen(b, func(c net.Conn) {
		br := bufio.NewReaderSize(c, 64<<10)
		bw := bufio.NewWriterSize(c, 64<<10)
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				return
			}
			if len(bytes.TrimSpace(line)) > 0 {
				continue
			}
			bw.Write(resp)
			if br.Buffered() == 0 {
				if bw.Flush() != nil {
					return
				}
			}
		}
	})
}

// BenchmarkPipeline is a list's fetch at its default depth: each op
// announces 8 resources of 2 KB and reads them, on one kept-alive
// connection.
func BenchmarkPipeline(b *testing.B) {
	base := cannedServer(b)
	p := NewPipeline(New(Options{ConnectTimeout: time.Second, DisableCompression: true, ReadBufferSize: benchReadBuffer}), 8)
	defer p.Close()
	urls := make([]string, 8)
	for i := range urls {
		urls[i] = fmt.Sprintf("%s/data/dir%d/file-%05d.bin", base, i%3, i)
	}
	ctx := context.Background()
	buf := make([]byte, 64<<10)
	b.ReportAllocs()
	for b.Loop() {
		for _, u := range urls {
			p.Add(u)
		}
		for _, u := range urls {
			rc, err := p.Next(ctx, u, 4096)
			if err != nil {
				b.Fatal(err)
			}
			n, err := io.CopyBuffer(io.Discard, rc, buf)
			rc.Close()
			if err != nil || n != 2048 {
				b.Fatalf("%s: %d bytes, %v", u, n, err)
			}
		}
	}
}

// benchReadBuffer is sync's (transfer.NewClient's) read buffer.
const benchReadBuffer = 64 << 10
