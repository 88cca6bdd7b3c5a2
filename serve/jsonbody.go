package serve

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/gcomp/gcomp"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// A JSON body is read token by token, each number stored straight into its input's tensor, which
// is allocated once at the model's full size (the batch's rows): a request holds at most its
// inputs' elements × 8 bytes, however many numbers its body carries. encoding/json's
// []json.RawMessage, a slice header and a copy per number, cost 48 bytes a number and more.

// maxRank bounds a shape read from a body: no model input has more dimensions.
const maxRank = 64

// jsonDecoder reads one request body.
type jsonDecoder struct {
	s   *Server
	dec *json.Decoder
}

// decodeJSON reads {"inputs": {NAME: {"dtype": D, "shape": [...], "data": [...]}}}.
func (s *Server) decodeJSON(body io.Reader) (map[string]*tensor.Tensor, error) {
	d := &jsonDecoder{s: s, dec: json.NewDecoder(body)}
	d.dec.UseNumber()
	in := map[string]*tensor.Tensor{}
	err := d.object(func(key string) error {
		if key != "inputs" {
			return badRequest("the body does not parse: unknown field %q (want \"inputs\")", key)
		}
		if len(in) > 0 {
			return badRequest(`the body does not parse: "inputs" twice`)
		}
		return d.object(func(name string) error {
			info, ok := s.input(name)
			if !ok {
				return badRequest("the model has no input %q (inputs: %s)", name, s.inputNames())
			}
			if in[name] != nil {
				return badRequest("input %s twice", name)
			}
			t, err := d.tensor(info)
			in[name] = t
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	if _, err := d.dec.Token(); err != io.EOF {
		return nil, badRequest("the body holds more than one JSON value")
	}
	return in, nil
}

// token is the next token; the end of the body inside a value is an unexpected EOF.
func (d *jsonDecoder) token() (json.Token, error) {
	tok, err := d.dec.Token()
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return nil, bodyError(err)
	}
	return tok, nil
}

func (d *jsonDecoder) delim(want json.Delim) error {
	tok, err := d.token()
	if err != nil {
		return err
	}
	if tok != want {
		return badRequest("the body does not parse: %s where %q opens or closes a value", describe(tok), string(want))
	}
	return nil
}

// object reads an object, calling field for each key with the decoder at its value.
func (d *jsonDecoder) object(field func(key string) error) error {
	if err := d.delim('{'); err != nil {
		return err
	}
	return d.fields(field)
}

// fields reads the rest of an object whose '{' has been read.
func (d *jsonDecoder) fields(field func(key string) error) error {
	for d.dec.More() {
		tok, err := d.token()
		if err != nil {
			return err
		}
		if err := field(tok.(string)); err != nil { // json.Decoder returns object keys as strings
			return err
		}
	}
	return d.delim('}')
}

// tensor reads input info's {"dtype", "shape", "data"} object (or null, an error). The data are
// stored as they come into a tensor of the model's full shape; once the object ends, its shape
// is checked against the model and the element count against the shape.
func (d *jsonDecoder) tensor(info gcomp.TensorInfo) (*tensor.Tensor, error) {
	switch tok, err := d.token(); {
	case err != nil:
		return nil, err
	case tok == nil:
		return nil, badRequest("input %s is null", info.Name)
	case tok != json.Delim('{'):
		return nil, badRequest("input %s is %s, want an object {\"shape\": [...], \"data\": [...]}", info.Name, describe(tok))
	}
	full := tensor.New(typeOf(info))
	var shape []int
	seen := map[string]bool{}
	n := -1 // elements read, -1 before "data"
	err := d.fields(func(key string) error {
		if seen[key] {
			return badRequest("input %s: field %q twice", info.Name, key)
		}
		seen[key] = true
		switch key {
		case "dtype":
			tok, err := d.token()
			if err != nil {
				return err
			}
			if s, ok := tok.(string); !ok || s != info.DType && s != "" { // "": the model's
				return badRequest("input %s is %v, the model wants %s", info.Name, tok, info.DType)
			}
		case "shape":
			var err error
			shape, err = d.shape(info)
			return err
		case "data":
			if shape != nil { // a shape before the data is checked before the data is read
				if err := d.s.checkShape(info, shape); err != nil {
					return err
				}
			}
			var err error
			n, err = d.data(info, full)
			return err
		default:
			return badRequest("the body does not parse: unknown field %q in input %s (want dtype, shape, data)", key, info.Name)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := d.s.checkShape(info, shape); err != nil {
		return nil, err
	}
	typ := typeOf(info)
	typ.Shape = ir.Shape(shape)
	if want := typ.Shape.NumElements(); n != want {
		return nil, badRequest("input %s: shape %v has %d elements, data has %d", info.Name, shape, want, max(n, 0))
	}
	if full.F != nil {
		return &tensor.Tensor{Type: typ, F: full.F[:n]}, nil
	}
	return &tensor.Tensor{Type: typ, I: full.I[:n]}, nil
}

// shape reads a shape: at most maxRank non-negative integers.
func (d *jsonDecoder) shape(info gcomp.TensorInfo) ([]int, error) {
	if err := d.delim('['); err != nil {
		return nil, err
	}
	var shape []int
	for d.dec.More() {
		tok, err := d.token()
		if err != nil {
			return nil, err
		}
		num, ok := tok.(json.Number)
		v, err := strconv.Atoi(string(num))
		if !ok || err != nil || v < 0 {
			return nil, badRequest("input %s: shape: %s is not a dimension", info.Name, describe(tok))
		}
		if shape = append(shape, v); len(shape) > maxRank {
			return nil, badRequest("input %s: shape: more than %d dimensions", info.Name, maxRank)
		}
	}
	return shape, d.delim(']')
}

// data reads the elements into t, the model's full tensor, refusing an element past its end.
func (d *jsonDecoder) data(info gcomp.TensorInfo, t *tensor.Tensor) (int, error) {
	if err := d.delim('['); err != nil {
		return 0, err
	}
	i := 0
	for ; d.dec.More(); i++ {
		tok, err := d.token()
		if err != nil {
			return 0, err
		}
		if i == t.Len() {
			return 0, badRequest("input %s: data has more than %d elements, the most the model's %s%v takes", info.Name, t.Len(), info.DType, info.Shape)
		}
		if err := setElement(t, i, tokenText(tok)); err != nil {
			return 0, badRequest("input %s: element %d: %v", info.Name, i, err)
		}
	}
	return i, d.delim(']')
}

// tokenText is a scalar token as it was written: a number's digits, true or false, a quoted
// string; a bracket of a nested value.
func tokenText(tok json.Token) string {
	switch v := tok.(type) {
	case json.Number:
		return string(v)
	case bool:
		return strconv.FormatBool(v)
	case string:
		return strconv.Quote(v)
	case nil:
		return "null"
	}
	return fmt.Sprint(tok)
}

// describe names a token in messages.
func describe(tok json.Token) string {
	if d, ok := tok.(json.Delim); ok {
		return fmt.Sprintf("%q", string(d))
	}
	return tokenText(tok)
}
