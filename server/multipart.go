package server

import (
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"slices"
)

// formSpec is what readForm needs to know of one route's multipart/form-data fields, and the
// route's dialect's answers to a body that breaks its rules.
type formSpec struct {
	maxParts   int      // parts beyond this many are tooMany's error
	fieldLimit int      // a non-file field's first fieldLimit+1 bytes are read (the caller sees the excess)
	files      []string // the fields read whole (the route's body limit bounds them)
	// fileLimit, when > 0, bounds a file too: its first fileLimit+1 bytes are read (the
	// caller sees the excess).
	fileLimit int64
	// repeatable lists the fields that may be sent more than once (array fields such as
	// include[]); a second part of any other field is duplicate's error.
	repeatable []string
	tooMany    func() error
	duplicate  func(name string) error
}

// readForm is the one multipart/form-data reader of the upload routes (HEAD's and OpenAI's
// audio, CNN, OpenAI's images/edits, image-to-image and videos). It reads body part by part and
// calls each with the part's form name and content: a file field whole (or its first
// fileLimit+1 bytes), any other field's first fieldLimit+1 bytes (the rest of the part is
// skipped). A part beyond maxParts is tooMany's
// error and a second part of a single-valued field duplicate's (never "the last one wins");
// a malformed body, or one over the body limit, is multipartErr's. each's own error stops the
// reading and is returned.
func readForm(body io.Reader, boundary string, spec formSpec, each func(name string, value []byte) error) error {
	mr := multipart.NewReader(body, boundary)
	var seen []string
	for parts := 0; ; parts++ {
		p, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return multipartErr(err)
		}
		if parts >= spec.maxParts {
			return spec.tooMany()
		}
		name := p.FormName()
		if slices.Contains(seen, name) && !slices.Contains(spec.repeatable, name) {
			return spec.duplicate(name)
		}
		seen = append(seen, name)
		var value []byte
		switch {
		case slices.Contains(spec.files, name) && spec.fileLimit > 0:
			value, err = io.ReadAll(io.LimitReader(p, spec.fileLimit+1))
		case slices.Contains(spec.files, name):
			value, err = io.ReadAll(p)
		default:
			value, err = io.ReadAll(io.LimitReader(p, int64(spec.fieldLimit)+1))
		}
		if err != nil {
			return multipartErr(err)
		}
		if err := each(name, value); err != nil {
			return err
		}
	}
}

// duplicateFieldMsg is the text of the 400 for a single-valued form field sent twice.
const duplicateFieldMsg = "form field %q was sent more than once; it takes one value (send it once)"

// pythonFormSpec is the form of HEAD's multipart routes (audio, CNN): every field single-valued,
// one "file"; its refusals are HEAD's {"detail"} 400s.
func pythonFormSpec(fieldLimit int) formSpec {
	return formSpec{
		maxParts: maxMultipartParts, fieldLimit: fieldLimit, files: []string{"file"},
		tooMany: func() error {
			return httpErr(http.StatusBadRequest, "too many multipart parts (at most %d)", maxMultipartParts)
		},
		duplicate: func(name string) error { return httpErr(http.StatusBadRequest, duplicateFieldMsg, name) },
	}
}

// openAIFormSpec is the form of OpenAI's multipart routes: its refusals are OpenAI's
// invalid_request_error 400s with param naming the field.
func openAIFormSpec(files, repeatable []string) formSpec {
	return formSpec{
		maxParts: maxOpenAIParts, fieldLimit: maxOpenAIFieldBytes, files: files, repeatable: repeatable,
		tooMany:   func() error { return invalidParam("", "too many multipart parts (at most %d)", maxOpenAIParts) },
		duplicate: func(name string) error { return invalidParam(name, duplicateFieldMsg, name) },
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
