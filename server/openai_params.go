package server

// OpenAI-dialect bodies are declared, not hand-parsed: a route's OpenAI parameters are a struct
// whose json tags name the fields, whose validate tags (github.com/go-playground/validator, the
// validator gin links) state each field's constraints, and whose msg tags say what the 400
// answers when a constraint fails (fmt verbs applied to the value sent; for a length rule on a
// string, to its length in characters; a string value is shortened to 64 bytes). msg is the
// field's answer for any rule; msg.<rule> (msg.required, msg.max, ...) overrides it for one
// rule, and msg.type answers a JSON value of the wrong type. decodeOpenAI reads a JSON body into
// such a struct and checks it; undeclared names the first body field the struct does not
// declare. Every refusal is OpenAI's invalid_request_error with param naming the field. (The Python dialect keeps its own reader, validate.go, for
// pydantic's lax coercions and its 422 shape.)

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/go-playground/validator/v10"

	"github.com/tenstorrent/tt-media-server-go/runners/whisper"
)

// openAIValidator is built once: it caches each struct's parsed tags.
var openAIValidator = sync.OnceValue(func() *validator.Validate {
	v := validator.New(validator.WithRequiredStructEnabled())
	v.RegisterTagNameFunc(jsonName)
	// nonblank: a string with something other than white space.
	_ = v.RegisterValidation("nonblank", func(fl validator.FieldLevel) bool { // a fixed, valid tag: no error
		return strings.TrimSpace(fl.Field().String()) != ""
	})
	// blank: empty or only white space (a field accepted only when it asks for nothing).
	_ = v.RegisterValidation("blank", func(fl validator.FieldLevel) bool { // a fixed, valid tag: no error
		return strings.TrimSpace(fl.Field().String()) == ""
	})
	// maxbytes=N: a string of at most N bytes (max counts characters).
	_ = v.RegisterValidation("maxbytes", func(fl validator.FieldLevel) bool { // a fixed, valid tag: no error
		n, err := strconv.Atoi(fl.Param())
		return err == nil && len(fl.Field().String()) <= n
	})
	// whisperlanguage: a language Whisper decodes (an ISO-639-1 code or its English name).
	_ = v.RegisterValidation("whisperlanguage", func(fl validator.FieldLevel) bool { // a fixed, valid tag: no error
		_, err := whisper.NormalizeLanguage(fl.Field().String())
		return err == nil
	})
	v.RegisterStructValidation(transcriptionRules, openAITranscriptionParams{})
	return v
})

// decodeOpenAI decodes data (an object: parseBody already checked it) into dst, a pointer to a
// declared parameter struct, and validates it.
func decodeOpenAI(data []byte, dst any) error {
	if err := json.Unmarshal(data, dst); err != nil {
		if ae, ok := errors.AsType[*apiError](err); ok { // a field type's own refusal
			return ae
		}
		if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok && te.Field != "" {
			if f, ok := declaredField(reflect.TypeOf(dst).Elem(), te.Field); ok && f.Tag.Get("msg.type") != "" {
				return invalidParam(te.Field, "%s", f.Tag.Get("msg.type"))
			}
			return invalidParam(te.Field, "%s must be %s, got a JSON %s", te.Field, jsonKind(te.Type), te.Value)
		}
		return invalidParam("", "We could not parse the JSON body of your request: %v", err)
	}
	err := openAIValidator().Struct(dst)
	if err == nil {
		return nil
	}
	ves, ok := errors.AsType[validator.ValidationErrors](err)
	if !ok || len(ves) == 0 {
		return fmt.Errorf("validate request: %w", err)
	}
	return fieldErr(reflect.TypeOf(dst).Elem(), ves[0], msgValue)
}

// fieldErr is the 400 of one failed constraint: the field's msg tag applied to what shown
// makes of the value, or a generic sentence naming the field and the rule. An array entry's or
// a map key's refusal names the field (timestamp_granularities, not timestamp_granularities[1]).
func fieldErr(t reflect.Type, fe validator.FieldError, shown func(validator.FieldError) any) error {
	name, _, _ := strings.Cut(fe.Field(), "[")
	structField, _, _ := strings.Cut(fe.StructField(), "[")
	if f, ok := t.FieldByName(structField); ok {
		msg, ok := f.Tag.Lookup("msg." + fe.Tag())
		if !ok {
			msg = f.Tag.Get("msg")
		}
		if msg != "" {
			if strings.Contains(msg, "%") {
				return invalidParam(name, msg, shown(fe))
			}
			return invalidParam(name, "%s", msg)
		}
	}
	switch fe.Tag() {
	case "required", "nonblank":
		if t := fe.Type(); t.Kind() != reflect.String && (t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.String) {
			return invalidParam(name, "%s is required", name) // a file, a number, ...
		}
		return invalidParam(name, "%s must be a non-empty string", name)
	case "oneof":
		return invalidParam(name, "%s must be one of %s, got %v", name, strings.ReplaceAll(fe.Param(), " ", ", "), fe.Value())
	}
	return invalidParam(name, "%s does not satisfy %s=%s, got %v", name, fe.Tag(), fe.Param(), fe.Value())
}

// msgValue is what a msg's verb shows of the value: a string's length for a length rule, a
// string shortened, otherwise the value.
func msgValue(fe validator.FieldError) any {
	v := fe.Value()
	s, ok := v.(string)
	if !ok {
		return v
	}
	switch fe.Tag() {
	case "min", "max", "len", "lt", "lte", "gt", "gte":
		return utf8.RuneCountInString(s)
	case "maxbytes":
		return len(s)
	}
	return shorten(s)
}

// declaredField is t's field whose json name is name.
func declaredField(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if f := t.Field(i); jsonName(f) == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

// declaredNames are the json names t declares, in order.
func declaredNames(t reflect.Type) []string {
	names := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		if n := jsonName(t.Field(i)); n != "" && n != "-" {
			names = append(names, n)
		}
	}
	return names
}

// undeclared is the first (in sorted order) of keys that t does not declare, if any.
func undeclared[V any](keys map[string]V, t reflect.Type) (string, bool) {
	names := declaredNames(t)
	var bad []string
	for k := range keys {
		if !slices.Contains(names, k) {
			bad = append(bad, k)
		}
	}
	if len(bad) == 0 {
		return "", false
	}
	return slices.Min(bad), true
}

// jsonKind names the JSON type a Go field takes.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "an object"
}

// laxInt, laxFloat and laxBool read a number or boolean as the OpenAI dialect always has here
// (the same lax rules as the Python dialect's reader: "5" and 5.0 are a fine integer, "true" a
// fine boolean), so that declaring the fields changed no accepted request.
type (
	laxInt   int64
	laxFloat float64
	laxBool  bool
)

// laxValue decodes one JSON value with numbers kept as written.
func laxValue(data []byte) any {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil
	}
	return v
}

// laxTypeErr is the type error encoding/json completes with the field's name.
func laxTypeErr(v any, t reflect.Type) error {
	kind := "value"
	switch v.(type) {
	case string:
		kind = "string"
	case json.Number:
		kind = "number"
	case bool:
		kind = "bool"
	case []any:
		kind = "array"
	case map[string]any:
		kind = "object"
	}
	return &json.UnmarshalTypeError{Value: kind, Type: t}
}

func (x *laxInt) UnmarshalJSON(data []byte) error {
	var b body
	v := laxValue(data)
	i, ok := b.toInt(nil, v)
	if !ok {
		return laxTypeErr(v, reflect.TypeFor[int64]())
	}
	*x = laxInt(i)
	return nil
}

func (x *laxFloat) UnmarshalJSON(data []byte) error {
	var b body
	v := laxValue(data)
	f, ok := b.toFloat(nil, v)
	if !ok {
		return laxTypeErr(v, reflect.TypeFor[float64]())
	}
	*x = laxFloat(f)
	return nil
}

func (x *laxBool) UnmarshalJSON(data []byte) error {
	switch v := laxValue(data).(type) {
	case bool:
		*x = laxBool(v)
		return nil
	case json.Number, string:
		if r, ok := parseLaxBool(fmt.Sprint(v)); ok {
			*x = laxBool(r)
			return nil
		}
		return laxTypeErr(v, reflect.TypeFor[bool]())
	default:
		return laxTypeErr(v, reflect.TypeFor[bool]())
	}
}
