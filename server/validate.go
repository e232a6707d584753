package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxListItems bounds list fields (timesteps, sigmas: a schedule has at most 1000 train steps).
const maxListItems = 1000

// body reads a JSON object field by field with pydantic v2's lax rules (what the Python
// server's clients rely on: "5" is a fine float, 5.0 a fine int) and collects FastAPI-style
// errors for the 422 answer. Unlike pydantic's default, a key the schema does not have is not
// ignored: forbidExtra refuses it, as pydantic's extra="forbid" does.
type body struct {
	raw   map[string]json.RawMessage
	data  []byte
	input any // the decoded body, echoed in "missing" errors as FastAPI does; decoded lazily
	errs  []fieldError
}

// parseBody decodes data as a JSON object. A decode error or a non-object is a 422 in
// FastAPI's shape. The body is walked once on the happy path (large base64 audio makes every
// extra pass expensive); the slower diagnostics run only for bad input.
func parseBody(data []byte) (*body, error) {
	var raw map[string]json.RawMessage
	err := json.Unmarshal(data, &raw)
	if err == nil && raw != nil {
		return &body{raw: raw, data: data}, nil
	}
	var input any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&input); err != nil {
		pos := 0
		var se *json.SyntaxError
		if errors.As(err, &se) {
			pos = int(se.Offset)
		}
		return nil, &apiError{status: http.StatusUnprocessableEntity, items: []fieldError{{
			Type: "json_invalid", Loc: []any{"body", pos}, Msg: "JSON decode error",
			Input: map[string]any{}, Ctx: map[string]any{"error": err.Error()},
		}}}
	}
	if dec.More() {
		return nil, &apiError{status: http.StatusUnprocessableEntity, items: []fieldError{{
			Type: "json_invalid", Loc: []any{"body", int(dec.InputOffset())}, Msg: "JSON decode error",
			Input: map[string]any{}, Ctx: map[string]any{"error": "extra data after the JSON value"},
		}}}
	}
	return nil, &apiError{status: http.StatusUnprocessableEntity, items: []fieldError{{
		Type: "model_attributes_type", Loc: []any{"body"},
		Msg: "Input should be a valid dictionary or object to extract fields from", Input: input,
	}}}
}

// echo is the decoded body for error messages.
func (b *body) echo() any {
	if b.input == nil {
		dec := json.NewDecoder(bytes.NewReader(b.data))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) == nil {
			b.input = v
		}
	}
	return b.input
}

// err returns the collected validation errors, or nil.
func (b *body) err() error {
	if len(b.errs) == 0 {
		return nil
	}
	return &apiError{status: http.StatusUnprocessableEntity, items: b.errs}
}

func (b *body) add(typ string, loc []any, msg string, input any, ctx map[string]any) {
	b.errs = append(b.errs, fieldError{Type: typ, Loc: append([]any{"body"}, loc...), Msg: msg, Input: input, Ctx: ctx})
}

// value returns the decoded JSON value of name; present is false when the key is absent,
// and the value is nil for JSON null.
func (b *body) value(name string) (v any, present bool) {
	r, ok := b.raw[name]
	if !ok {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(r))
	dec.UseNumber()
	_ = dec.Decode(&v) // already valid JSON
	return v, true
}

// forbidExtra adds pydantic's extra="forbid" error (422, type extra_forbidden, loc
// ["body", name]) for every top-level key of b that is not one of schema's fields: a field
// this server does not read would otherwise be accepted and ignored. Keys are reported in
// sorted order.
func (b *body) forbidExtra(schema ...[]string) {
	var extra []string
	for k := range b.raw {
		if !inAny(k, schema) {
			extra = append(extra, k)
		}
	}
	slices.Sort(extra)
	for _, k := range extra {
		b.extraForbidden(k)
	}
}

// extraForbidden adds the extra_forbidden error of one field.
func (b *body) extraForbidden(name string) {
	v, _ := b.value(name)
	if s, ok := v.(string); ok {
		v = shorten(s)
	}
	b.add("extra_forbidden", []any{name}, "Extra inputs are not permitted", v, nil)
}

func inAny(name string, lists [][]string) bool {
	for _, l := range lists {
		if slices.Contains(l, name) {
			return true
		}
	}
	return false
}

func (b *body) missing(name string) {
	b.add("missing", []any{name}, "Field required", b.echo(), nil)
}

// str reads a string field. Required strings may not be null.
func (b *body) str(name string, required bool) (string, bool) {
	if r, ok := b.raw[name]; ok && len(r) > 0 && r[0] == '"' {
		var s string
		if json.Unmarshal(r, &s) == nil {
			return s, true
		}
	}
	v, ok := b.value(name)
	if !ok || (v == nil && !required) {
		if required && !ok {
			b.missing(name)
		}
		return "", false
	}
	s, isStr := v.(string)
	if !isStr {
		b.add("string_type", []any{name}, "Input should be a valid string", v, nil)
		return "", false
	}
	return s, true
}

// strMax reads a string field of at most max characters (pydantic's max_length).
func (b *body) strMax(name string, required bool, max int) (string, bool) {
	s, ok := b.str(name, required)
	if ok {
		if n := utf8.RuneCountInString(s); n > max {
			b.add("string_too_long", []any{name}, fmt.Sprintf("String should have at most %d characters", max), shorten(s), map[string]any{"max_length": max})
			return "", false
		}
	}
	return s, ok
}

// float reads a number field (lax: numeric strings are accepted). nil means absent or null.
func (b *body) float(name string, required bool) *float64 {
	v, ok := b.value(name)
	if !ok || v == nil {
		if required {
			if !ok {
				b.missing(name)
			} else {
				b.add("float_type", []any{name}, "Input should be a valid number", nil, nil)
			}
		}
		return nil
	}
	f, ok := b.toFloat([]any{name}, v)
	if !ok {
		return nil
	}
	return &f
}

func (b *body) toFloat(loc []any, v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil || math.IsInf(f, 0) {
			b.add("finite_number", loc, "Input should be a finite number", v, nil)
			return 0, false
		}
		return f, true
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		if err != nil {
			b.add("float_parsing", loc, "Input should be a valid number, unable to parse string as a number", v, nil)
			return 0, false
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			b.add("finite_number", loc, "Input should be a finite number", v, nil)
			return 0, false
		}
		return f, true
	default:
		b.add("float_type", loc, "Input should be a valid number", v, nil)
		return 0, false
	}
}

// int reads an integer field (lax: "12", 12.0 and true are accepted). nil means absent or null.
func (b *body) int(name string) *int64 {
	v, ok := b.value(name)
	if !ok || v == nil {
		return nil
	}
	i, ok := b.toInt([]any{name}, v)
	if !ok {
		return nil
	}
	return &i
}

func (b *body) toInt(loc []any, v any) (int64, bool) {
	parse := func(s string) (int64, bool) {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i, true
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, false
		}
		if f != math.Trunc(f) || math.Abs(f) > 1<<62 {
			b.add("int_from_float", loc, "Input should be a valid integer, got a number with a fractional part", v, nil)
			return 0, false
		}
		return int64(f), true
	}
	switch x := v.(type) {
	case json.Number:
		n := len(b.errs)
		i, ok := parse(string(x))
		if !ok && len(b.errs) == n {
			b.add("int_type", loc, "Input should be a valid integer", v, nil)
		}
		return i, ok
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case string:
		n := len(b.errs)
		i, ok := parse(strings.TrimSpace(x))
		if !ok && len(b.errs) == n {
			b.add("int_parsing", loc, "Input should be a valid integer, unable to parse string as an integer", v, nil)
		}
		return i, ok
	default:
		b.add("int_type", loc, "Input should be a valid integer", v, nil)
		return 0, false
	}
}

// rangeCheck adds pydantic's ge/le errors for a number that was read. isFloat prints the
// limits as Python prints floats ("1.0"), as pydantic's messages do for float fields.
func (b *body) rangeCheck(name string, x, ge, le float64, isFloat bool, input any) bool {
	switch {
	case x < ge:
		b.add("greater_than_equal", []any{name}, "Input should be greater than or equal to "+pyNum(ge, isFloat), input, map[string]any{"ge": limit(ge, isFloat)})
		return false
	case x > le:
		b.add("less_than_equal", []any{name}, "Input should be less than or equal to "+pyNum(le, isFloat), input, map[string]any{"le": limit(le, isFloat)})
		return false
	}
	return true
}

// floats reads a list of numbers (timesteps, sigmas). nil means absent or null.
func (b *body) floats(name string) []float64 {
	v, ok := b.value(name)
	if !ok || v == nil {
		return nil
	}
	list, isList := v.([]any)
	if !isList {
		b.add("list_type", []any{name}, "Input should be a valid list", v, nil)
		return nil
	}
	if len(list) > maxListItems {
		b.add("too_long", []any{name}, fmt.Sprintf("List should have at most %d items after validation, not %d", maxListItems, len(list)), nil, map[string]any{"field_type": "List", "max_length": maxListItems, "actual_length": len(list)})
		return nil
	}
	out := make([]float64, 0, len(list))
	for i, it := range list {
		f, ok := b.toFloat([]any{name, i}, it)
		if ok {
			out = append(out, f)
		}
	}
	return out
}

// bool reads a boolean with pydantic's lax rules (true/false, 1/0, "yes"/"no", "on"/"off").
func (b *body) bool(name string, def bool) bool {
	v, ok := b.value(name)
	if !ok || v == nil {
		return def
	}
	switch x := v.(type) {
	case bool:
		return x
	case json.Number, string:
		if r, ok := parseLaxBool(fmt.Sprint(x)); ok {
			return r
		}
	}
	b.add("bool_parsing", []any{name}, "Input should be a valid boolean, unable to interpret input", v, nil)
	return def
}

// parseLaxBool is pydantic's (and FastAPI's form) boolean parsing.
func parseLaxBool(s string) (bool, bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "true", "t", "yes", "y", "on":
		return true, true
	case "0", "false", "f", "no", "n", "off":
		return false, true
	}
	return false, false
}

// pyNum prints a limit the way Python's repr does.
func pyNum(f float64, isFloat bool) string {
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if isFloat && !strings.ContainsAny(s, ".e") {
		s += ".0"
	}
	return s
}

func limit(f float64, isFloat bool) any {
	if isFloat {
		return f
	}
	return int64(f)
}

func rawInput(b *body, name string) any {
	v, _ := b.value(name)
	return v
}
