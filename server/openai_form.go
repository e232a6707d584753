package server

// OpenAI's multipart/form-data bodies are declared like its JSON bodies (openai_params.go): a
// route's form is a struct whose json tags name each field (the param of its refusals), whose
// form tags name the parts that fill it and how, and whose validate and msg tags state its
// constraints and their answers, checked by the same validator. decodeOpenAIForm reads the
// parts (readForm: one pass over the body, a file part read whole, any other bounded) into
// the struct and validates it. A form tag is
//
//	form:"name1 name2,option,..."
//
// the part names that fill the field (default: the json name; "x[*]" fills a map from the
// bracketed parts x[key], and such a field's json name x[*] names x in its refusals), then options: file (a file part, read whole into a []byte), trim
// (the value is read, and quoted in a refusal, without its surrounding white space). A slice
// field may be sent more than once (an array: include[], timestamp_granularities); any other
// field once, under any of its names. A value is converted to the field's type: a bool by
// the lax rules of both dialects ("true", "1", "on", ...), an integer in base 10, a float as
// Go parses it; a value that does not convert answers msg.type (or msg). A msg's verb shows
// the value sent (a string field's, or one array entry's, as read; another type's as written
// in the part); a rule naming another field (excluded_if=...) shows that field's value.
//
// The struct's blank field carries the form's own answers: msg.unknown (a part the struct does
// not declare, named by the verb) and msg.duplicate (a single-valued field sent twice;
// duplicateFieldMsg by default). A struct with a refusePart method is asked first about an
// undeclared part (translations name the transcription-only fields).

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/go-playground/validator/v10"
)

// formField is one field of a declared form.
type formField struct {
	index      []int  // the struct field (reflect.Value.FieldByIndex)
	structName string // its Go name (validator's StructField)
	name       string // its json name: the param of its refusals
	file, trim bool
	prefix     string // "x[" for a map filled from the parts x[key]
}

// formDecl is a form struct's declaration, parsed once per type.
type formDecl struct {
	fields               []formField
	byName               map[string]int // part name → fields index
	unknownMsg, dupMsg   string
	files, repeatable    []string // part names readForm reads whole / lets repeat
	partNames, jsonNames []string // every part name, every json name (in order)
}

var formDecls sync.Map // reflect.Type → *formDecl

// formDeclOf parses t's tags (a struct type).
func formDeclOf(t reflect.Type) *formDecl {
	if d, ok := formDecls.Load(t); ok {
		return d.(*formDecl)
	}
	d := &formDecl{byName: map[string]int{}, unknownMsg: "unknown parameter %q", dupMsg: duplicateFieldMsg}
	for _, sf := range reflect.VisibleFields(t) {
		if sf.Name == "_" {
			if m := sf.Tag.Get("msg.unknown"); m != "" {
				d.unknownMsg = m
			}
			if m := sf.Tag.Get("msg.duplicate"); m != "" {
				d.dupMsg = m
			}
			continue
		}
		if sf.Anonymous || !sf.IsExported() {
			continue
		}
		f := formField{index: sf.Index, structName: sf.Name, name: jsonName(sf)}
		names, opts, _ := strings.Cut(sf.Tag.Get("form"), ",")
		if names == "" {
			names = f.name
		}
		f.name, _, _ = strings.Cut(f.name, "[") // a bracketed field's refusals name the field
		for _, o := range strings.Split(opts, ",") {
			f.file = f.file || o == "file"
			f.trim = f.trim || o == "trim"
		}
		parts := strings.Fields(names)
		if !slices.Contains(d.jsonNames, f.name) {
			d.jsonNames = append(d.jsonNames, f.name)
		}
		for _, p := range parts {
			if pre, ok := strings.CutSuffix(p, "[*]"); ok {
				f.prefix = pre + "["
			} else {
				d.byName[p] = len(d.fields)
			}
			d.partNames = append(d.partNames, p)
			switch {
			case f.file:
				d.files = append(d.files, p)
			case sf.Type.Kind() == reflect.Slice:
				d.repeatable = append(d.repeatable, p)
			}
		}
		d.fields = append(d.fields, f)
	}
	got, _ := formDecls.LoadOrStore(t, d)
	return got.(*formDecl)
}

// lookup is the field a part name fills, and the map key of a bracketed part.
func (d *formDecl) lookup(name string) (*formField, string, bool) {
	if i, ok := d.byName[name]; ok {
		return &d.fields[i], "", true
	}
	for i := range d.fields {
		f := &d.fields[i]
		if f.prefix != "" && strings.HasPrefix(name, f.prefix) && strings.HasSuffix(name, "]") {
			return f, name[len(f.prefix) : len(name)-1], true
		}
	}
	return nil, "", false
}

// declares says whether a form of type t takes a part called name.
func declares(t reflect.Type, name string) bool {
	_, _, ok := formDeclOf(t).lookup(name)
	return ok
}

// partRefuser is a form struct with its own answer to some undeclared parts (nil: the form's
// msg.unknown).
type partRefuser interface {
	refusePart(name string) error
}

// formLimits bound a form's parts: a non-file field's bytes (past it, a 400 naming it) and,
// when fileBytes > 0, a file's (past it, a 413 naming it; 0: only the route's body limit).
type formLimits struct {
	fieldBytes int
	fileBytes  int64
}

// openAIFormLimits are the limits of OpenAI's audio and image forms.
var openAIFormLimits = formLimits{fieldBytes: maxOpenAIFieldBytes}

// decodeOpenAIForm reads in, a multipart/form-data body (ctHeader: its Content-Type as sent),
// into dst, a pointer to a declared form struct holding the route's defaults, and validates it.
func decodeOpenAIForm(in *request, ctHeader string, lim formLimits, dst any) error {
	if in.contentType != "multipart/form-data" {
		// 400 as OpenAI answers it (the SDKs raise BadRequestError; a 415 is a bare APIError).
		return &apiError{status: http.StatusBadRequest,
			msg: fmt.Sprintf("Content-Type must be multipart/form-data, got %q", ctHeader)}
	}
	if in.boundary == "" {
		return invalidParam("", "multipart/form-data without a boundary")
	}
	rv := reflect.ValueOf(dst).Elem()
	d := formDeclOf(rv.Type())
	raws := map[string]string{} // struct field → the value of its first part, as a refusal shows it
	spec := openAIFormSpec(d.files, d.repeatable)
	spec.fieldLimit, spec.fileLimit = lim.fieldBytes, lim.fileBytes
	spec.duplicate = func(name string) error { return invalidParam(name, d.dupMsg, name) }
	err := readForm(bytes.NewReader(in.data), in.boundary, spec, func(name string, raw []byte) error {
		f, key, ok := d.lookup(name)
		if ok && f.file {
			if lim.fileBytes > 0 && int64(len(raw)) > lim.fileBytes {
				return &apiError{status: http.StatusRequestEntityTooLarge, param: name, msg: fmt.Sprintf("%s exceeds %d bytes", name, lim.fileBytes)}
			}
			return setFormFile(rv, f, raw, raws)
		}
		if len(raw) > lim.fieldBytes {
			return invalidParam(name, "field %s is longer than %d bytes", name, lim.fieldBytes)
		}
		if !ok {
			if r, ok := dst.(partRefuser); ok {
				if err := r.refusePart(name); err != nil {
					return err
				}
			}
			return invalidParam(name, d.unknownMsg, name)
		}
		return setFormValue(rv, f, name, key, string(raw), raws)
	})
	if err != nil {
		return err
	}
	err = openAIValidator().Struct(dst)
	if err == nil {
		return nil
	}
	ves, ok := errors.AsType[validator.ValidationErrors](err)
	if !ok || len(ves) == 0 {
		return fmt.Errorf("validate form: %w", err)
	}
	return fieldErr(rv.Type(), ves[0], formShown(rv, raws))
}

// repeatedErr is the answer to a single-valued field sent again under another of its names.
func repeatedErr(rv reflect.Value, f *formField, name string) error {
	sf, _ := rv.Type().FieldByName(f.structName)
	if m := sf.Tag.Get("msg.repeat"); m != "" {
		return invalidParam(f.name, "%s", m)
	}
	return invalidParam(name, duplicateFieldMsg, name)
}

func setFormFile(rv reflect.Value, f *formField, raw []byte, raws map[string]string) error {
	if _, seen := raws[f.structName]; seen {
		return repeatedErr(rv, f, f.name)
	}
	raws[f.structName] = ""
	rv.FieldByIndex(f.index).SetBytes(raw)
	return nil
}

// setFormValue converts one part's value into its field.
func setFormValue(rv reflect.Value, f *formField, name, key, raw string, raws map[string]string) error {
	v := rv.FieldByIndex(f.index)
	shown := raw
	if f.trim {
		raw = strings.TrimSpace(raw)
		shown = raw
	}
	if f.prefix != "" {
		shown = key
	}
	if _, seen := raws[f.structName]; !seen {
		raws[f.structName] = shown
	} else if v.Kind() != reflect.Slice && v.Kind() != reflect.Map {
		return repeatedErr(rv, f, name)
	}
	if v.Kind() == reflect.Pointer {
		v.Set(reflect.New(v.Type().Elem()))
		v = v.Elem()
	}
	if (v.Kind() == reflect.Slice || v.Kind() == reflect.Map) && v.Type().Elem().Kind() != reflect.String {
		return fmt.Errorf("form field %s: unsupported type %s (a list or map of strings only)", f.structName, v.Type())
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(raw)
	case reflect.Slice:
		v.Set(reflect.Append(v, reflect.ValueOf(raw)))
	case reflect.Map:
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		v.SetMapIndex(reflect.ValueOf(key), reflect.ValueOf(raw))
	case reflect.Bool:
		b, ok := parseLaxBool(raw)
		if !ok {
			return formTypeErr(rv, f, v.Type(), shown)
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int64:
		n, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
		if err != nil {
			return formTypeErr(rv, f, v.Type(), shown)
		}
		v.SetInt(n)
	case reflect.Float64:
		x, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
		if err != nil {
			return formTypeErr(rv, f, v.Type(), shown)
		}
		v.SetFloat(x)
	default:
		return fmt.Errorf("form field %s: unsupported type %s", f.structName, v.Type())
	}
	return nil
}

// formTypeErr is the answer to a value that is not of its field's type: msg.type, or msg.
func formTypeErr(rv reflect.Value, f *formField, t reflect.Type, shown string) error {
	sf, _ := rv.Type().FieldByName(f.structName)
	msg, ok := sf.Tag.Lookup("msg.type")
	if !ok {
		msg = sf.Tag.Get("msg")
	}
	if msg == "" {
		return invalidParam(f.name, "%s must be %s, got %q", f.name, jsonKind(t), shorten(shown))
	}
	if strings.Contains(msg, "%") {
		return invalidParam(f.name, msg, shorten(shown))
	}
	return invalidParam(f.name, "%s", msg)
}

// crossFieldRules are the validator rules whose first parameter names another field.
var crossFieldRules = []string{"excluded_if", "excluded_unless", "required_if", "required_unless", "eqfield", "nefield"}

// formShown is what a refusal's verb shows for fe: the other field's value for a cross-field
// rule; a string's value as read (its length for a length rule); otherwise the part as sent.
func formShown(rv reflect.Value, raws map[string]string) func(validator.FieldError) any {
	return func(fe validator.FieldError) any {
		if slices.Contains(crossFieldRules, fe.Tag()) {
			other, _, _ := strings.Cut(fe.Param(), " ")
			if o := rv.FieldByName(other); o.IsValid() {
				for o.Kind() == reflect.Pointer && !o.IsNil() {
					o = o.Elem()
				}
				if s, ok := o.Interface().(string); ok {
					return shorten(s)
				}
				return o.Interface()
			}
		}
		if _, ok := fe.Value().(string); ok {
			return msgValue(fe)
		}
		name, _, _ := strings.Cut(fe.StructField(), "[")
		if raw, ok := raws[name]; ok {
			return shorten(raw)
		}
		return fe.Value()
	}
}
