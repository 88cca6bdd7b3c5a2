package checkpoint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// fields reads config.json's fields by name. The first error sticks, so a reader takes every field
// in a row and checks err once; every error names the file and the field.
type fields struct {
	file string
	m    map[string]json.RawMessage
	err  error
}

func (f *fields) fail(format string, args ...any) {
	if f.err == nil {
		f.err = fmt.Errorf("%s: "+format, append([]any{f.file}, args...)...)
	}
}

// raw returns a field's JSON, or nil when the field is absent or null.
func (f *fields) raw(key string) json.RawMessage {
	r := f.m[key]
	if r == nil || bytes.Equal(bytes.TrimSpace(r), []byte("null")) {
		return nil
	}
	return r
}

func (f *fields) has(key string) bool { return f.raw(key) != nil }

// number decodes a field as a JSON number.
func (f *fields) number(key string) (float64, bool) {
	r := f.raw(key)
	if r == nil {
		return 0, false
	}
	var v float64
	if err := json.Unmarshal(r, &v); err != nil {
		f.fail("%s: want a number, have %s", key, short(r))
		return 0, false
	}
	return v, true
}

// int reads an integer field in [lo, hi]; an absent field is def, or an error when def < 0.
func (f *fields) int(key string, def, lo, hi int) int {
	v, ok := f.number(key)
	if !ok {
		if f.err == nil && def < 0 {
			f.fail("%s is missing", key)
		}
		return def
	}
	if v != math.Trunc(v) {
		f.fail("%s: want an integer, have %s", key, short(f.raw(key)))
		return 0
	}
	if v < float64(lo) || v > float64(hi) {
		f.fail("%s %s is out of range [%d, %d]", key, short(f.raw(key)), lo, hi)
		return 0
	}
	return int(v)
}

// float reads a finite number field in (lo, hi]; absent is def.
func (f *fields) float(key string, def, lo, hi float64) float64 {
	v, ok := f.number(key)
	if !ok {
		return def
	}
	if !(v > lo && v <= hi) {
		f.fail("%s %s is out of range (%g, %g]", key, short(f.raw(key)), lo, hi)
		return 0
	}
	return v
}

// bool reads a boolean field; absent is def.
func (f *fields) bool(key string, def bool) bool { return decodeField(f, key, def, "true or false") }

// str reads a string field; absent is def.
func (f *fields) str(key, def string) string { return decodeField(f, key, def, "a string") }

// decodeField reads a field as a JSON value of type T (want names it in the error); absent is def.
func decodeField[T any](f *fields, key string, def T, want string) T {
	r := f.raw(key)
	if r == nil {
		return def
	}
	var v T
	if err := json.Unmarshal(r, &v); err != nil {
		f.fail("%s: want %s, have %s", key, want, short(r))
		return def
	}
	return v
}

// ids reads a token id field that is an integer or a list of integers, each in [0, vocab).
func (f *fields) ids(key string, vocab int) []int {
	r := f.raw(key)
	if r == nil {
		return nil
	}
	var list []json.RawMessage
	if bytes.HasPrefix(bytes.TrimSpace(r), []byte("[")) {
		if err := json.Unmarshal(r, &list); err != nil {
			f.fail("%s: want a token id or a list of them, have %s", key, short(r))
			return nil
		}
	} else {
		list = []json.RawMessage{r}
	}
	var out []int
	for _, e := range list {
		var v float64
		if err := json.Unmarshal(e, &v); err != nil || v != math.Trunc(v) {
			f.fail("%s: want a token id or a list of them, have %s", key, short(r))
			return nil
		}
		if v < 0 || v >= float64(vocab) {
			f.fail("%s %s is outside the vocabulary of %d tokens", key, short(e), vocab)
			return nil
		}
		out = append(out, int(v))
	}
	return out
}

// short quotes a field's JSON for an error, cut to a readable length.
func short(r json.RawMessage) string {
	s := strings.Join(strings.Fields(string(r)), " ")
	if r := []rune(s); len(r) > 60 {
		s = string(r[:57]) + "..."
	}
	return s
}
