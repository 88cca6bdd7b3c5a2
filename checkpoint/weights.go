package checkpoint

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gcomp/gcomp/quant"
	"github.com/gcomp/gcomp/tensorio"
)

// Weight is one of a model's weights in a checkpoint: where it is stored and what it is. Its data
// is read and converted by Array.
type Weight struct {
	Name   string // canonical Hugging Face name (Spec.Name)
	Stored string // the name in the file
	File   string // the file that holds it
	DType  string // stored dtype: f32, f16 or bf16
	Shape  []int
	src    *tensorio.SafetensorsFile

	// A quantized linear layer (Quant set): Shape is the float weight's [out, in], DType "i32",
	// and parts name its stored tensors by suffix (qweight, qzeros, scales, g_idx), Stored the
	// layer's stored name without a suffix.
	Quant *quant.Format
	parts map[string]*tensorio.SafetensorsFile
}

// Weights are a checkpoint's weights checked against a config, in model order.
type Weights struct {
	List   []*Weight
	byName map[string]*Weight
}

// Get returns the weight of a canonical name, or nil.
func (w *Weights) Get(name string) *Weight { return w.byName[name] }

// maxListed bounds how many names an error lists.
const maxListed = 8

// Tensors matches the checkpoint's tensors to the weights cfg expects (Expected): names brought to
// their canonical form, buffers skipped, a tied lm_head.weight dropped, every shape checked. Every
// disagreement is reported in one error: shapes that differ (naming the file, the tensor, the
// shape found and the shape expected), a dtype other than F32, F16 and BF16, and the missing and
// the unexpected tensors as two lists.
func (c *Checkpoint) Tensors(cfg *Config) (*Weights, error) {
	specs := Expected(cfg)
	want := make(map[string][]int, len(specs))
	for _, s := range specs {
		want[s.Name] = s.Shape
	}
	found := map[string]*Weight{}
	var problems, unexpected []string
	packed := map[string]*Weight{} // quantized layers by canonical weight name
	for _, stored := range c.names {
		name := canonical(cfg.Arch, stored)
		if name == "" || name == "lm_head.weight" && cfg.TiedEmbeddings {
			continue
		}
		src := c.where[stored]
		if w := c.quantPart(cfg, stored, name, packed); w != nil {
			if _, ok := want[w.Name]; ok {
				continue
			}
		}
		dtype, shape, _ := src.Info(stored)
		shapeWant, ok := want[name]
		if !ok {
			unexpected = append(unexpected, stored)
			continue
		}
		if prev, ok := found[name]; ok {
			problems = append(problems, fmt.Sprintf("%q and %q are the same tensor %s", prev.Stored, stored, name))
			continue
		}
		w := &Weight{Name: name, Stored: stored, File: src.Path(), DType: dtype, Shape: shape, src: src}
		found[name] = w
		if !slices.Equal(shape, shapeWant) {
			problems = append(problems, fmt.Sprintf("%s: tensor %q has shape %v, config.json wants %v", w.File, stored, shape, shapeWant))
		}
		if dtype != "f32" && dtype != "f16" && dtype != "bf16" {
			problems = append(problems, fmt.Sprintf("%s: tensor %q has dtype %s (F32, F16 and BF16 are read)", w.File, stored, strings.ToUpper(dtype)))
		}
	}
	problems = append(problems, c.checkPacked(cfg, want, packed, found)...)
	var missing []string
	ws := &Weights{byName: found}
	for _, s := range specs {
		if w, ok := found[s.Name]; ok {
			ws.List = append(ws.List, w)
		} else {
			missing = append(missing, s.Name)
		}
	}
	if len(missing) > 0 {
		problems = append(problems, "missing "+list(missing))
	}
	if len(unexpected) > 0 {
		problems = append(problems, "unexpected "+list(unexpected))
	}
	if len(problems) > 0 {
		if len(problems) > maxListed {
			problems = append(problems[:maxListed], fmt.Sprintf("and %d more", len(problems)-maxListed))
		}
		return nil, fmt.Errorf("checkpoint: %s does not match %s (%s: %s): %s", c.Dir, ConfigFile, cfg.ModelType, shortDesc(cfg), strings.Join(problems, "; "))
	}
	return ws, nil
}

// list formats names for an error: a count and the first few.
func list(names []string) string {
	noun := "tensors"
	if len(names) == 1 {
		noun = "tensor"
	}
	shown := names
	more := ""
	if len(names) > maxListed {
		shown, more = names[:maxListed], fmt.Sprintf(" and %d more", len(names)-maxListed)
	}
	return fmt.Sprintf("%d %s: %s%s", len(names), noun, strings.Join(shown, ", "), more)
}

// shortDesc names a config's sizes in an error.
func shortDesc(c *Config) string {
	return fmt.Sprintf("%d layers, hidden %d, vocabulary %d", c.Layers, c.Hidden, c.Vocab)
}

// Load converts every weight to dtype ("" is f32): names to arrays, all or nothing.
func (w *Weights) Load(dtype string) (map[string]*tensorio.Array, error) {
	out := make(map[string]*tensorio.Array, len(w.List))
	for _, x := range w.List {
		a, err := x.Array(dtype)
		if err != nil {
			return nil, err
		}
		out[x.Name] = a
	}
	return out, nil
}

// Array reads the weight and converts it to dtype: "f32" (also ""), "f16" or "bf16". The array is
// the caller's: it does not alias the file. A quantized layer is dequantized (Layer, then
// quant.Layer.Dequantize) and converted.
func (w *Weight) Array(dtype string) (*tensorio.Array, error) {
	if dtype == "" {
		dtype = "f32"
	}
	if _, ok := converters[dtype]; !ok {
		return nil, fmt.Errorf("checkpoint: dtype %q is not supported (f32, f16, bf16)", dtype)
	}
	if w.Quant != nil {
		return w.dequantized(dtype)
	}
	v, err := w.src.View(w.Stored)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %s", strings.TrimPrefix(err.Error(), "tensorio: "))
	}
	data, err := convert(v.Data, w.DType, dtype)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %s: tensor %q: %v", w.File, w.Stored, err)
	}
	return &tensorio.Array{DType: dtype, Shape: slices.Clone(w.Shape), Data: data}, nil
}
