package serve

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"mime"
	"net/http"
	"slices"
	"strconv"

	"github.com/gcomp/gcomp"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/tensorio"
)

// npyType is the media type of a NumPy .npy body.
const npyType = "application/x-npy"

// decode reads a request's inputs, each checked against the model, and their rows.
func (s *Server) decode(r *http.Request) (map[string]*tensor.Tensor, int, error) {
	media := "application/json"
	if ct := r.Header.Get("Content-Type"); ct != "" {
		var err error
		if media, _, err = mime.ParseMediaType(ct); err != nil {
			return nil, 0, &httpError{http.StatusUnsupportedMediaType, fmt.Sprintf("Content-Type %q: %v", ct, err)}
		}
	}
	in := map[string]*tensor.Tensor{}
	switch media {
	case "application/json":
		var err error
		if in, err = s.decodeJSON(r.Body); err != nil {
			return nil, 0, err
		}
	case npyType:
		if len(s.inputs) != 1 {
			return nil, 0, badRequest("a .npy body is one tensor; the model has %d inputs (%s): send JSON", len(s.inputs), s.inputNames())
		}
		info := s.inputs[0]
		var refused error // the header's dtype or shape is not the model's: refused before the data
		a, err := tensorio.ReadNPYChecked(bufio.NewReader(r.Body), func(dtype string, shape []int) error {
			if dtype != info.DType {
				refused = badRequest("input %s is %s, the model wants %s", info.Name, dtype, info.DType)
			} else {
				refused = s.checkShape(info, shape)
			}
			return refused
		})
		if refused != nil {
			return nil, 0, refused
		}
		if err != nil {
			return nil, 0, bodyError(err)
		}
		t, err := tensor.FromArray(a)
		if err != nil {
			return nil, 0, badRequest("input %s: %v", s.inputs[0].Name, err)
		}
		in[s.inputs[0].Name] = t
	default:
		return nil, 0, &httpError{http.StatusUnsupportedMediaType, fmt.Sprintf("Content-Type %s: want application/json or %s", media, npyType)}
	}
	return s.check(in)
}

// bodyError is a body that did not parse: 413 when it was cut at the size limit, else 400.
func bodyError(err error) error {
	var mb *http.MaxBytesError
	if errors.As(err, &mb) {
		return err
	}
	return badRequest("the body does not parse: %v", err)
}

// check checks that in holds every input, each of the model's dtype and of its shape but for
// the rows (1 to the batch; exactly the model's shape when it has no batch), all with the same
// rows, and returns the rows.
func (s *Server) check(in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, int, error) {
	rows := -1
	for _, info := range s.inputs {
		t := in[info.Name]
		if t == nil {
			return nil, 0, badRequest("no value for input %s (%s%v)", info.Name, info.DType, info.Shape)
		}
		if got := t.Type.DType.String(); got != info.DType {
			return nil, 0, badRequest("input %s is %s, the model wants %s", info.Name, got, info.DType)
		}
		shape := []int(t.Type.Shape)
		if err := s.checkShape(info, shape); err != nil {
			return nil, 0, err
		}
		n := 1
		if s.batch > 0 {
			n = shape[0]
		}
		if rows >= 0 && n != rows {
			return nil, 0, badRequest("the inputs have different rows: %d and %d (input %s)", rows, n, info.Name)
		}
		rows = n
	}
	return in, rows, nil
}

// checkShape checks a request's shape against the model's input: the model's shape but for
// the rows, 1 to the batch (exactly the model's shape when it has no batch).
func (s *Server) checkShape(info gcomp.TensorInfo, shape []int) error {
	want := fmt.Sprint(info.Shape)
	if s.batch > 0 {
		want += fmt.Sprintf(" (any rows from 1 to %d)", s.batch)
	}
	if len(shape) != len(info.Shape) || s.batch == 0 && !slices.Equal(shape, info.Shape) || s.batch > 0 && !slices.Equal(shape[1:], info.Shape[1:]) {
		return badRequest("input %s has shape %v, the model wants %s", info.Name, shape, want)
	}
	if s.batch > 0 && (shape[0] < 1 || shape[0] > s.batch) {
		return badRequest("input %s has %d rows, the model takes 1 to %d", info.Name, shape[0], s.batch)
	}
	return nil
}

// setElement parses element i of t from its JSON text: a number, true or false for bool, and
// "NaN", "Infinity" and "-Infinity" for those floats.
func setElement(t *tensor.Tensor, i int, s string) error {
	d := t.Type.DType
	if d == ir.Bool {
		switch s {
		case "true", "1":
			t.I[i] = 1
		case "false", "0":
			t.I[i] = 0
		default:
			return fmt.Errorf("%s is not a bool", s)
		}
		return nil
	}
	if d.IsFloat() {
		var f float64
		switch s {
		case `"NaN"`:
			f = math.NaN()
		case `"Infinity"`:
			f = math.Inf(1)
		case `"-Infinity"`:
			f = math.Inf(-1)
		default:
			var err error
			if f, err = strconv.ParseFloat(s, 64); err != nil {
				return fmt.Errorf("%s is not a number", s)
			}
		}
		t.F[i] = tensor.RoundFloat(d, f)
		return nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || tensor.WrapInt(d, n) != n {
		return fmt.Errorf("%s is not an integer of %s", s, d)
	}
	t.I[i] = n
	return nil
}

// replyFormat chooses how the outputs are written: JSON, or (Accept: application/x-npy) one
// output's .npy, named by ?output= when the model has several.
func replyFormat(r *http.Request, outputs []gcomp.TensorInfo) (func(http.ResponseWriter, map[string]*tensor.Tensor), error) {
	if accept := r.Header.Get("Accept"); accept != "" {
		if media, _, err := mime.ParseMediaType(accept); err == nil && media == npyType {
			name := r.URL.Query().Get("output")
			if name == "" && len(outputs) == 1 {
				name = outputs[0].Name
			}
			if !slices.ContainsFunc(outputs, func(o gcomp.TensorInfo) bool { return o.Name == name }) {
				return nil, badRequest("an .npy reply is one output: name it with ?output= (outputs: %s)", names(outputs))
			}
			return func(w http.ResponseWriter, out map[string]*tensor.Tensor) { writeNPY(w, out[name]) }, nil
		}
	}
	return writeJSON, nil
}

func writeNPY(w http.ResponseWriter, t *tensor.Tensor) {
	var buf bytes.Buffer
	if err := tensorio.WriteNPY(&buf, t.Array()); err != nil {
		writeError(w, err) // bf16: NumPy has no such dtype
		return
	}
	w.Header().Set("Content-Type", npyType)
	w.Write(buf.Bytes())
}

// writeJSON writes {"outputs": {NAME: {"dtype", "shape", "data"}}}, floats in their shortest
// round-tripping form for their dtype.
func writeJSON(w http.ResponseWriter, out map[string]*tensor.Tensor) {
	var b bytes.Buffer
	b.WriteString(`{"outputs":{`)
	for i, name := range sortedKeys(out) {
		t := out[name]
		if i > 0 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(name)
		fmt.Fprintf(&b, `%s:{"dtype":%q,"shape":[`, key, t.Type.DType.String())
		for j, d := range t.Type.Shape {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(d))
		}
		b.WriteString(`],"data":[`)
		bits := 64
		if t.Type.DType != ir.F64 {
			bits = 32 // f16 and bf16 values are f32 values too
		}
		for j := range t.Len() {
			if j > 0 {
				b.WriteByte(',')
			}
			switch f := t.At(j); {
			case t.F == nil && t.Type.DType == ir.Bool:
				b.WriteString(strconv.FormatBool(f != 0))
			case t.F == nil:
				b.WriteString(strconv.FormatInt(t.I[j], 10))
			case math.IsNaN(f):
				b.WriteString(`"NaN"`)
			case math.IsInf(f, 1):
				b.WriteString(`"Infinity"`)
			case math.IsInf(f, -1):
				b.WriteString(`"-Infinity"`)
			default:
				b.WriteString(strconv.FormatFloat(f, 'g', -1, bits))
			}
		}
		b.WriteString("]}")
	}
	b.WriteString("}}\n")
	w.Header().Set("Content-Type", "application/json")
	w.Write(b.Bytes())
}

func (s *Server) input(name string) (gcomp.TensorInfo, bool) {
	i := slices.IndexFunc(s.inputs, func(t gcomp.TensorInfo) bool { return t.Name == name })
	if i < 0 {
		return gcomp.TensorInfo{}, false
	}
	return s.inputs[i], true
}

func (s *Server) inputNames() string { return names(s.inputs) }

func names(ts []gcomp.TensorInfo) string {
	var out []byte
	for i, t := range ts {
		if i > 0 {
			out = append(out, ", "...)
		}
		out = append(out, t.Name...)
	}
	return string(out)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
