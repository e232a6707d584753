package server

import (
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"os"
)

// readForm is the one multipart/form-data reader of the upload routes (audio, OpenAI audio,
// CNN). It reads body part by part and calls each with the part's form name and content: the
// "file" part whole (the route's body limit bounds it), any other part's first fieldLimit+1
// bytes, so that a caller can tell a value over the limit (the rest of the part is skipped).
// A part beyond maxParts is tooMany's error; a malformed body, or one over the body limit, is
// multipartErr's. each's own error stops the reading and is returned.
func readForm(body io.Reader, boundary string, maxParts, fieldLimit int, tooMany func() error, each func(name string, value []byte) error) error {
	mr := multipart.NewReader(body, boundary)
	for parts := 0; ; parts++ {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return multipartErr(err)
		}
		if parts >= maxParts {
			return tooMany()
		}
		name := p.FormName()
		var value []byte
		if name == "file" {
			value, err = io.ReadAll(p)
		} else {
			value, err = io.ReadAll(io.LimitReader(p, int64(fieldLimit)+1))
		}
		if err != nil {
			return multipartErr(err)
		}
		if err := each(name, value); err != nil {
			return err
		}
	}
}

// multipartErr is the answer to a multipart body that cannot be read: 413 past the body limit,
// 400 otherwise.
func multipartErr(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) || errors.Is(err, os.ErrDeadlineExceeded) {
		return bodyErr(err)
	}
	return httpErr(http.StatusBadRequest, "malformed multipart body: %v", err)
}
