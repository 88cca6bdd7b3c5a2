package checkpoint

import (
	"fmt"
	"strings"
)

// Params counts the weights of a model of cfg (a tied output projection counted once).
func Params(cfg *Config) int64 {
	var n int64
	for _, s := range Expected(cfg) {
		e := int64(1)
		for _, d := range s.Shape {
			e *= int64(d)
		}
		n += e
	}
	return n
}

// Describe summarizes a config in one paragraph, for `gcomp generate --stats`: the family, the
// sizes, the context, the dtype, the parameter count and the weights' bytes in that dtype (f32
// when the config names none).
func Describe(cfg *Config) string {
	var b strings.Builder
	family := cfg.Arch
	if cfg.ModelType != cfg.Arch {
		family += " (" + cfg.ModelType + ")"
	}
	fmt.Fprintf(&b, "%s: %d layers, hidden %d, %d heads", family, cfg.Layers, cfg.Hidden, cfg.Heads)
	if cfg.KVHeads != cfg.Heads {
		fmt.Fprintf(&b, " (%d key/value heads)", cfg.KVHeads)
	}
	fmt.Fprintf(&b, " of %d, MLP %d (%s), vocabulary %d, context %d", cfg.HeadDim, cfg.Intermediate, cfg.Activation, cfg.Vocab, cfg.MaxSeq)
	if cfg.Arch == "llama" {
		fmt.Fprintf(&b, ", RoPE base %g", cfg.RopeTheta)
	}
	if cfg.QKVBias && cfg.Arch == "llama" {
		b.WriteString(", q/k/v biases")
	}
	if cfg.TiedEmbeddings {
		b.WriteString(", tied embeddings")
	}
	if q := cfg.Quant; q != nil {
		groups := fmt.Sprintf("groups of %d", q.GroupSize)
		if q.GroupSize == -1 {
			groups = "per output channel"
		}
		fmt.Fprintf(&b, ", linear layers %s int%d (%s; the bytes below are the float model's)", q.Method, q.Bits, groups)
	}
	dtype := cfg.DType
	if dtype == "" {
		dtype = "f32"
	}
	n := Params(cfg)
	fmt.Fprintf(&b, "; %s parameters (%s), %s in %s.", group(n), approx(float64(n), ""), approx(float64(n*int64(sizes[dtype])), "B"), dtype)
	return b.String()
}

// group writes n with thousands separators.
func group(n int64) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// approx writes v with a decimal prefix: 124.4M, 14.5 GB.
func approx(v float64, unit string) string {
	prefixes := []string{"", "K", "M", "G", "T"}
	i := 0
	for v >= 1000 && i < len(prefixes)-1 {
		v /= 1000
		i++
	}
	if unit != "" {
		return fmt.Sprintf("%.1f %s%s", v, prefixes[i], unit)
	}
	return fmt.Sprintf("%.1f%s", v, prefixes[i])
}
