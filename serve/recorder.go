package serve

import (
	"io"
	"net/http"
)

// recorder notes a response's status and body size for the log. It keeps
// io.ReaderFrom, so that http.ServeContent still hands a file to the
// connection with sendfile, and Unwrap for http.ResponseController.
type recorder struct {
	http.ResponseWriter
	code int
	n    int64
}

func (r *recorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(p)
	r.n += int64(n)
	return n, err
}

func (r *recorder) ReadFrom(src io.Reader) (int64, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	n, err := io.Copy(r.ResponseWriter, src)
	r.n += n
	return n, err
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (r *recorder) status() int {
	if r.code == 0 {
		return http.StatusOK
	}
	return r.code
}
