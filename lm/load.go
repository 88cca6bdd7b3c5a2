package lm

import (
	"fmt"

	"github.com/gcomp/gcomp/checkpoint"
	"github.com/gcomp/gcomp/tensor"
)

// FromCheckpoint is the programs' Config of a checkpoint's config.json.
func FromCheckpoint(c *checkpoint.Config) (Config, error) {
	if c.Arch == "llama" && c.MLPBias {
		return Config{}, fmt.Errorf("lm: %s with biases on the MLP (mlp_bias) is not supported", c.ModelType)
	}
	return Config{
		Arch: c.Arch, Vocab: c.Vocab, Hidden: c.Hidden, Intermediate: c.Intermediate, Layers: c.Layers,
		Heads: c.Heads, KVHeads: c.KVHeads, MaxSeq: c.MaxSeq, NormEps: c.NormEps, RopeTheta: c.RopeTheta,
		TiedEmbeddings: c.TiedEmbeddings, QKVBias: c.QKVBias, OutBias: c.Arch == "llama" && c.OutBias,
	}, nil
}

// LoadCheckpoint reads a Hugging Face model folder (config.json and model.safetensors or its
// shards): the weights are mapped, checked against the config, and converted to f32 one tensor at
// a time, so the file is never held twice. A quantized folder's (GPTQ, AWQ) linear layers are
// dequantized at load (quantizedWeight). maxSeq, when positive, bounds the KV cache below the
// model's context (a cache for the whole context of a large model is large).
func LoadCheckpoint(dir string, maxSeq int) (*Model, *checkpoint.Config, error) {
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
	for _, w := range ws.List {
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
	m, err := New(cfg, weights)
	if err != nil {
		return nil, nil, err
	}
	return m, cc, nil
}

// loadWeight reads one weight as f32; a quantized layer goes through quantizedWeight.
func loadWeight(w *checkpoint.Weight) (*tensor.Tensor, error) {
	if w.Quant != nil {
		return quantizedWeight(w)
	}
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
