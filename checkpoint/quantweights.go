package checkpoint

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gcomp/gcomp/quant"
	"github.com/gcomp/gcomp/tensorio"
)

// quantPart files a stored tensor of a quantized checkpoint under its layer when it is one of a
// quantizable layer's packed tensors (NAME.qweight, .qzeros, .scales, .g_idx), and returns that
// layer's weight; nil for any other tensor.
func (c *Checkpoint) quantPart(cfg *Config, stored, name string, packed map[string]*Weight) *Weight {
	if cfg.Quant == nil {
		return nil
	}
	dot := strings.LastIndexByte(name, '.')
	suffix := name[dot+1:]
	switch suffix {
	case "qweight", "qzeros", "scales", "g_idx":
	default:
		return nil
	}
	wname := name[:dot] + ".weight"
	if !Quantizable(wname) {
		return nil
	}
	w := packed[wname]
	if w == nil {
		sdot := strings.LastIndexByte(stored, '.')
		w = &Weight{Name: wname, Stored: stored[:sdot], DType: "i32", Quant: cfg.Quant, parts: map[string]*tensorio.SafetensorsFile{}}
		packed[wname] = w
	}
	w.parts[suffix] = c.where[stored]
	if suffix == "qweight" || w.File == "" {
		w.File = c.where[stored].Path()
	}
	return w
}

// checkPacked checks each quantized layer's tensors against the config (quant.CheckShapes: dtypes,
// shapes, packed sizes) and adds it to found; a layer stored both packed and as a float weight is
// a problem.
func (c *Checkpoint) checkPacked(cfg *Config, want map[string][]int, packed, found map[string]*Weight) []string {
	var problems []string
	names := make([]string, 0, len(packed))
	for name := range packed {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		w := packed[name]
		shape, ok := want[name]
		if !ok {
			continue // a layer the config has no room for: its tensors were listed as unexpected
		}
		if prev, ok := found[name]; ok {
			problems = append(problems, fmt.Sprintf("%q is stored both as %q and packed as %q", name, prev.Stored, w.Stored))
			continue
		}
		w.Shape = slices.Clone(shape)
		info := func(suffix string) (string, []int, bool) {
			f := w.parts[suffix]
			if f == nil {
				return "", nil, false
			}
			return f.Info(w.Stored + "." + suffix)
		}
		if err := quant.CheckShapes(*cfg.Quant, w.File, w.Stored, shape[0], shape[1], info); err != nil {
			problems = append(problems, strings.TrimPrefix(err.Error(), "quant: "))
			continue
		}
		found[name] = w
	}
	return problems
}

// Layer reads a quantized weight's packed tensors into quant's canonical form, every index checked.
func (w *Weight) Layer() (*quant.Layer, error) {
	if w.Quant == nil {
		return nil, fmt.Errorf("checkpoint: %s: tensor %q is not quantized", w.File, w.Stored)
	}
	p := quant.Packed{File: w.File, Name: w.Stored, Tensors: map[string]*tensorio.Array{}}
	for suffix, f := range w.parts {
		v, err := f.View(w.Stored + "." + suffix)
		if err != nil {
			return nil, fmt.Errorf("checkpoint: %s", strings.TrimPrefix(err.Error(), "tensorio: "))
		}
		if v.Data, err = convert(v.Data, v.DType, v.DType); err != nil { // a copy, read under fault protection
			return nil, fmt.Errorf("checkpoint: %s: tensor %q: %v", f.Path(), w.Stored+"."+suffix, err)
		}
		p.Tensors[suffix] = v
	}
	l, err := quant.Unpack(*w.Quant, p, w.Shape[0], w.Shape[1])
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %s", strings.TrimPrefix(err.Error(), "quant: "))
	}
	return l, nil
}

// dequantized is a quantized weight's Array: dequantized in f32, then converted to dtype.
func (w *Weight) dequantized(dtype string) (*tensorio.Array, error) {
	l, err := w.Layer()
	if err != nil {
		return nil, err
	}
	v := l.Dequantize()
	raw := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(x))
	}
	data, err := convert(raw, "f32", dtype)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %s: layer %q: %v", w.File, w.Stored, err)
	}
	return &tensorio.Array{DType: dtype, Shape: slices.Clone(w.Shape), Data: data}, nil
}
