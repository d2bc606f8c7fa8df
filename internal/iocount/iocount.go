// Package iocount counts the bytes that pass through a reader or a
// writer (and a writer's failure), for the callers that must know how much was used (the raw
// bytes a deflate stream took, a document's size against its cap, what a
// command printed) without buffering it.
package iocount

import "io"

// Reader reads from R and counts in N the bytes read.
type Reader struct {
	R io.Reader
	N int64
}

func (c *Reader) Read(p []byte) (int, error) {
	n, err := c.R.Read(p)
	c.N += int64(n)
	return n, err
}

// Writer writes to W and counts in N the bytes written. Err is the last
// error W returned: in a copy, it tells the writer's failure from the
// reader's.
type Writer struct {
	W   io.Writer
	N   int64
	Err error
}

func (c *Writer) Write(p []byte) (int, error) {
	n, err := c.W.Write(p)
	c.N += int64(n)
	if err != nil {
		c.Err = err
	}
	return n, err
}
