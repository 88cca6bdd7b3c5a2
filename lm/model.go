package lm

import (
	"fmt"

	"github.com/gcomp/gcomp/examples/gpt2"
	"github.com/gcomp/gcomp/examples/llama"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// Config is what the programs need of a model's config.json.
type Config struct {
	Arch                                                        string // "gpt2" or "llama"
	Vocab, Hidden, Intermediate, Layers, Heads, KVHeads, MaxSeq int
	NormEps, RopeTheta                                          float64
	TiedEmbeddings, QKVBias, OutBias                            bool
	Quant                                                       QuantConfig // the linear layers' storage on the device
}

// HeadDim is the size of one attention head.
func (c Config) HeadDim() int { return c.Hidden / c.Heads }

// arch builds a model's two programs.
type arch interface {
	prefill(b *frontend.Builder, batch, T int)
	decode(b *frontend.Builder, batch int)
}

type gpt2Arch struct{ c gpt2.Config }

func (a gpt2Arch) prefill(b *frontend.Builder, batch, T int) { gpt2.Prefill(b, a.c, batch, T) }
func (a gpt2Arch) decode(b *frontend.Builder, batch int)     { gpt2.Decode(b, a.c, batch) }

type llamaArch struct{ c llama.Config }

func (a llamaArch) prefill(b *frontend.Builder, batch, T int) { llama.Prefill(b, a.c, batch, T) }
func (a llamaArch) decode(b *frontend.Builder, batch int)     { llama.Decode(b, a.c, batch) }

func archOf(c Config) (arch, error) {
	switch c.Arch {
	case "gpt2":
		return gpt2Arch{gpt2.Config{Vocab: c.Vocab, Embd: c.Hidden, Layers: c.Layers, Heads: c.Heads, Inner: c.Intermediate, MaxSeq: c.MaxSeq, NormEps: c.NormEps}}, nil
	case "llama":
		return llamaArch{llama.Config{Vocab: c.Vocab, Hidden: c.Hidden, Intermediate: c.Intermediate, Layers: c.Layers, Heads: c.Heads,
			KVHeads: c.KVHeads, MaxSeq: c.MaxSeq, NormEps: c.NormEps, RopeTheta: c.RopeTheta, TiedEmbeddings: c.TiedEmbeddings, QKVBias: c.QKVBias, OutBias: c.OutBias}}, nil
	}
	return nil, fmt.Errorf("lm: no programs for architecture %q (gpt2 and llama are known)", c.Arch)
}

// Model is a language model's configuration and weights, ready to open engines on.
type Model struct {
	Config
	arch    arch
	weights map[string]*tensor.Tensor
	atLoad  []string // quantized layers dequantized at load (DequantizedAtLoad)
}

// New makes a model of c with weights by parameter name (Hugging Face's names); every
// parameter of the programs must have its weight, of its shape, and no other weight may be given.
func New(c Config, weights map[string]*tensor.Tensor) (*Model, error) {
	return newModel(c, weights, nil)
}

// newModel is New with the quantized layers whose weights are f32 (atLoad, sorted).
func newModel(c Config, weights map[string]*tensor.Tensor, atLoad []string) (*Model, error) {
	a, err := archOf(c)
	if err != nil {
		return nil, err
	}
	if err := checkPerms(weights); err != nil {
		return nil, err
	}
	m := &Model{Config: c, arch: a, weights: weights, atLoad: atLoad}
	g, err := m.graph("decode", func(b *frontend.Builder) { a.decode(b, 1) })
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, p := range g.Params() {
		w := weights[p.Name]
		switch {
		case w == nil:
			missing = append(missing, p.Name)
		case !w.Type.Equal(p.Type):
			return nil, fmt.Errorf("lm: weight %s is %s, the model wants %s", p.Name, w.Type, p.Type)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("lm: no weight for %d parameters: %v", len(missing), missing)
	}
	if len(weights) != len(g.Params()) {
		for name := range weights {
			if g.Lookup(name) == nil {
				return nil, fmt.Errorf("lm: weight %s is no parameter of the model", name)
			}
		}
	}
	return m, nil
}

// MaxSeq is the longest sequence (prompt and generated tokens) the cache holds.
func (m *Model) MaxSeq() int { return m.Config.MaxSeq }

// graph builds one of the model's programs.
func (m *Model) graph(name string, build func(*frontend.Builder), opts ...frontend.Option) (*ir.Graph, error) {
	if m.Quant.Bits != 0 {
		opts = append(opts, frontend.WithQuantizedParams(m.onDevice))
	}
	g, err := frontend.Build(name, build, opts...)
	if err != nil {
		return nil, fmt.Errorf("lm: building the %s program: %v", name, err)
	}
	return g, nil
}

// cacheType is the type of one layer's keys or values for batch sequences: [batch, kv_heads,
// max_seq, head_dim].
func (m *Model) cacheType(batch int) ir.Type {
	kv := m.KVHeads
	if m.Arch == "gpt2" || kv == 0 {
		kv = m.Heads
	}
	return ir.T(ir.F32, batch, kv, m.Config.MaxSeq, m.HeadDim())
}

// cacheStates pairs each cache state's output with its input: new_kv_cache.L.k → kv_cache.L.k,
// for every layer L, keys and values (nn.KVCache).
func (m *Model) cacheStates() map[string]string {
	states := map[string]string{}
	for l := range m.Layers {
		for kv := range 2 {
			states[nn.KVCacheName(outCache, l, kv)] = nn.KVCacheName(inCache, l, kv)
		}
	}
	return states
}

// checkIDs refuses token ids outside the vocabulary.
func (m *Model) checkIDs(ids []int) error {
	for _, id := range ids {
		if id < 0 || id >= m.Vocab {
			return fmt.Errorf("lm: token id %d is outside the vocabulary [0, %d)", id, m.Vocab)
		}
	}
	return nil
}

// ProgramGraph builds one program of a model of c without its weights (gcomp dump): "decode" for
// batch sequences, or "prefill" of T tokens each.
func ProgramGraph(c Config, program string, batch, T int) (*ir.Graph, error) {
	a, err := archOf(c)
	if err != nil {
		return nil, err
	}
	m := &Model{Config: c, arch: a}
	switch program {
	case "decode":
		return m.graph("decode", func(b *frontend.Builder) { a.decode(b, batch) })
	case "prefill":
		if T < 1 || T > c.MaxSeq {
			return nil, fmt.Errorf("lm: a prefill of %d tokens: the context holds 1 to %d", T, c.MaxSeq)
		}
		return m.graph(fmt.Sprintf("prefill_%d", T), func(b *frontend.Builder) { a.prefill(b, batch, T) })
	}
	return nil, fmt.Errorf("lm: no program %q (prefill or decode)", program)
}
