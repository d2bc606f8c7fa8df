//go:build !unix

package transfer

import "errors"

func mkfifo(string) error { return errors.ErrUnsupported }
