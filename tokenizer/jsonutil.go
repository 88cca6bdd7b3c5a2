package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
)

// fileError is an error in a file, at a field (a JSON path such as "model.merges[3]") or a line.
type fileError struct {
	file  string
	where string
	msg   string
}

func (e *fileError) Error() string {
	if e.where == "" {
		return e.file + ": " + e.msg
	}
	return e.file + ": " + e.where + ": " + e.msg
}

func errorf(file, where, format string, args ...any) error {
	return &fileError{file: file, where: where, msg: fmt.Sprintf(format, args...)}
}

// decodeJSON unmarshals data, reporting a syntax error at its line and column and a type error
// at its field.
func decodeJSON(file string, data []byte, v any) error {
	err := json.Unmarshal(data, v)
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &syn):
		line, col := lineCol(data, syn.Offset-1) // Offset is just past the bad byte
		return &fileError{file: fmt.Sprintf("%s:%d:%d", file, line, col), msg: "malformed JSON: " + syn.Error()}
	case errors.As(err, &typ):
		where := typ.Field
		if where == "" {
			where = "the top level"
		}
		return errorf(file, where, "a JSON %s where %s is expected", typ.Value, typ.Type)
	}
	return errorf(file, "", "malformed JSON: %v", err)
}

// lineCol returns the 1-based line and column of the byte at offset off.
func lineCol(data []byte, off int64) (int, int) {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := len(before) - bytes.LastIndexByte(before, '\n')
	return line, col
}

// sortedKeys returns m's keys in order, for deterministic errors.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
