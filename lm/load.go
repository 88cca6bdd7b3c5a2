package lm

import (
	"fmt"
	"maps"
	"slices"

	"github.com/gcomp/gcomp/checkpoint"
	"github.com/gcomp/gcomp/tensor"
)

// FromCheckpoint is the programs' Config of a checkpoint's config.json.
func FromCheckpoint(c *checkpoint.Config) (Config, error) {
	if c.Arch == "llama" && c.MLPBias {
		return Config{}, fmt.Errorf("lm: %s with biases on the MLP (mlp_bias) is not supported", c.ModelType)
	}
	var q QuantConfig
	if c.Quant != nil {
		q = QuantConfig{Bits: c.Quant.Bits, GroupSize: c.Quant.GroupSize}
	}
	return Config{
		Arch: c.Arch, Vocab: c.Vocab, Hidden: c.Hidden, Intermediate: c.Intermediate, Layers: c.Layers,
		Heads: c.Heads, KVHeads: c.KVHeads, MaxSeq: c.MaxSeq, NormEps: c.NormEps, RopeTheta: c.RopeTheta,
		TiedEmbeddings: c.TiedEmbeddings, QKVBias: c.QKVBias, OutBias: c.Arch == "llama" && c.OutBias,
		Quant: q,
	}, nil
}

// LoadCheckpoint reads a Hugging Face model folder (config.json and model.safetensors or its
// shards): the weights are mapped, checked against the config, and converted to f32 one tensor at
// a time, so the file is never held twice. A quantized folder's (GPTQ, AWQ) linear layers stay
// quantized: their integers, scales and zero points are the program's parameters, dequantized in
// the kernels that read them (quantizedWeights), except layers with act-order, which are
// dequantized at load (Model.DequantizedAtLoad). maxSeq, when positive, bounds the KV cache below
// the model's context (a cache for the whole context of a large model is large).
func LoadCheckpoint(dir string, maxSeq int) (*Model, *checkpoint.Config, error) {
	return loadCheckpoint(dir, maxSeq, false)
}

// loadCheckpoint is LoadCheckpoint; allAtLoad dequantizes every quantized layer at load (the
// float route the tests compare the quantized one against).
func loadCheckpoint(dir string, maxSeq int, allAtLoad bool) (*Model, *checkpoint.Config, error) {
	cc, err := checkpoint.ReadConfig(dir)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := FromCheckpoint(cc)
	if err != nil {
		return nil, nil, err
	}
	if maxSeq > 0 {
		if maxSeq > cfg.MaxSeq {
			return nil, nil, fmt.Errorf("lm: a context of %d tokens is longer than the model's %d", maxSeq, cfg.MaxSeq)
		}
		cfg.MaxSeq = maxSeq
	}
	if allAtLoad {
		cfg.Quant = QuantConfig{}
	}
	ck, err := checkpoint.Open(dir)
	if err != nil {
		return nil, nil, err
	}
	defer ck.Close()
	ws, err := ck.Tensors(cc)
	if err != nil {
		return nil, nil, err
	}
	weights := make(map[string]*tensor.Tensor, len(ws.List))
	var atLoad []string
	for _, w := range ws.List {
		if w.Quant != nil {
			ts, f32, err := quantizedWeights(w, cfg.Quant)
			if err != nil {
				return nil, nil, err
			}
			if f32 && cfg.Quant.Bits != 0 {
				atLoad = append(atLoad, w.Name)
			}
			maps.Copy(weights, ts)
			continue
		}
		t, err := loadWeight(w)
		if err != nil {
			return nil, nil, err
		}
		if cfg.Arch == "gpt2" && w.Name == "transformer.wpe.weight" && cfg.MaxSeq < t.Type.Shape[0] {
			// The position table's rows past the cache are never read.
			t.Type.Shape[0] = cfg.MaxSeq
			t.F = t.F[:cfg.MaxSeq*t.Type.Shape[1]]
		}
		weights[w.Name] = t
	}
	slices.Sort(atLoad)
	m, err := newModel(cfg, weights, atLoad)
	if err != nil {
		return nil, nil, err
	}
	return m, cc, nil
}

// loadWeight reads one float weight as f32.
func loadWeight(w *checkpoint.Weight) (*tensor.Tensor, error) {
	a, err := w.Array("f32")
	if err != nil {
		return nil, err
	}
	t, err := tensor.FromArray(a)
	if err != nil {
		return nil, fmt.Errorf("lm: %s: %v", w.Name, err)
	}
	return t, nil
}
