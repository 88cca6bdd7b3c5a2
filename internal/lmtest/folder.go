package lmtest

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/gcomp/gcomp/checkpoint"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/tensorio"
)

// WriteFolder writes c's model as a Hugging Face folder in dir: config.json, and the hash weights
// in c.DType as model.safetensors, or as shards with model.safetensors.index.json when shards > 1.
// GPT-2's names are written without the transformer. prefix and with the attn.bias mask buffers
// older files carry, as the loader must accept them.
func WriteFolder(dir string, c *Case, shards int) error {
	cfgJSON, err := json.MarshalIndent(c.Config, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), cfgJSON, 0o644); err != nil {
		return err
	}
	cfg, err := checkpoint.ReadConfig(dir)
	if err != nil {
		return err
	}
	tensors := map[string]*tensorio.Array{}
	var order []string
	for _, s := range checkpoint.Expected(cfg) {
		n := 1
		for _, d := range s.Shape {
			n *= d
		}
		name := s.Name
		if cfg.Arch == "gpt2" {
			name = strings.TrimPrefix(name, "transformer.")
		}
		tensors[name] = encode(HashWeights(s.Name, n), s.Shape, c.DType)
		order = append(order, name)
	}
	if cfg.Arch == "gpt2" {
		for l := range cfg.Layers {
			mask := make([]float32, cfg.MaxSeq*cfg.MaxSeq)
			tensors[fmt.Sprintf("h.%d.attn.bias", l)] = encode(mask, []int{1, 1, cfg.MaxSeq, cfg.MaxSeq}, "f32")
		}
	}
	if shards <= 1 {
		return tensorio.WriteSafetensorsFile(filepath.Join(dir, "model.safetensors"), tensors, map[string]string{"format": "pt"})
	}
	weightMap := map[string]string{}
	for s := range shards {
		file := fmt.Sprintf("model-%05d-of-%05d.safetensors", s+1, shards)
		part := map[string]*tensorio.Array{}
		for i, name := range order {
			if i*shards/len(order) == s {
				part[name] = tensors[name]
				weightMap[name] = file
			}
		}
		if err := tensorio.WriteSafetensorsFile(filepath.Join(dir, file), part, map[string]string{"format": "pt"}); err != nil {
			return err
		}
	}
	index, err := json.MarshalIndent(map[string]any{"metadata": map[string]any{}, "weight_map": weightMap}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"), index, 0o644)
}

func encode(v []float32, shape []int, dtype string) *tensorio.Array {
	a := &tensorio.Array{DType: dtype, Shape: shape}
	switch dtype {
	case "f32":
		a.Data = make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(a.Data[4*i:], math.Float32bits(x))
		}
	case "bf16", "f16":
		a.Data = make([]byte, 2*len(v))
		for i, x := range v {
			h := tensor.FloatToBF16(float64(x))
			if dtype == "f16" {
				h = tensor.FloatToF16(float64(x))
			}
			binary.LittleEndian.PutUint16(a.Data[2*i:], h)
		}
	default:
		panic("lmtest: dtype " + dtype)
	}
	return a
}
