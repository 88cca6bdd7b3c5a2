package checkpoint

import (
	"encoding/json"
	"regexp"
	"strings"

	"github.com/gcomp/gcomp/quant"
)

// quantConfig reads quantization_config: GPTQ (classic format, 4 or 8 bit) and AWQ (GEMM, 4 bit,
// with zero points) are read; every other method, format or variant is refused by name, because
// its tensors would be read as something else.
func quantConfig(f *fields, c *Config) {
	r := f.raw("quantization_config")
	if r == nil || f.err != nil {
		return
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(r, &m); err != nil || m == nil {
		f.fail("quantization_config: want an object or null, have %s", short(r))
		return
	}
	q := &fields{file: f.file + ": quantization_config", m: m}
	fm := &quant.Format{Method: q.str("quant_method", "")}
	switch fm.Method {
	case "":
		q.fail("quant_method is missing")
	case "gptq":
		fm.Bits = q.int("bits", -1, 1, 64)
		fm.GroupSize = q.int("group_size", 128, -1, maxIntermediate)
		fm.DescAct = q.bool("desc_act", false)
		fm.Sym = q.bool("sym", true)
		if cf := q.str("checkpoint_format", "gptq"); cf != "gptq" {
			q.fail("checkpoint_format %q is not supported (gptq)", cf)
		}
	case "awq":
		fm.Bits = q.int("bits", 4, 1, 64)
		fm.GroupSize = q.int("group_size", 128, -1, maxIntermediate)
		if !q.bool("zero_point", true) {
			q.fail("zero_point false is not supported")
		}
		if v := q.str("version", "gemm"); !strings.EqualFold(v, "gemm") {
			q.fail("version %q is not supported (gemm)", v)
		}
	}
	if q.err == nil {
		if err := fm.Check(); err != nil {
			q.fail("%v", err)
		}
	}
	if q.err == nil && c.Arch != "llama" {
		q.fail("quantized %s checkpoints are not supported (the llama family's are)", c.ModelType)
	}
	if q.err != nil {
		f.err = q.err
		return
	}
	c.Quant = fm
}

// quantizable matches the weights a quantized checkpoint stores packed: the linear layers of the
// transformer blocks (embeddings, norms and lm_head stay float, as GPTQ and AWQ leave them).
var quantizable = regexp.MustCompile(`^model\.layers\.[0-9]+\.(self_attn|mlp)\.[a-z]+_proj\.weight$`)

// Quantizable reports whether the weight of a canonical name is stored packed in a quantized
// checkpoint of cfg's family.
func Quantizable(name string) bool { return quantizable.MatchString(name) }
