package checkpoint

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/gcomp/gcomp/quant"
	"github.com/gcomp/gcomp/tensorio"
)

// CopiedFiles are the files of a model folder that a quantized copy carries over unchanged: the
// tokenizer's and the generation defaults.
var CopiedFiles = []string{"tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json", "merges.txt",
	"special_tokens_map.json", "added_tokens.json", "generation_config.json"}

// maxCopiedBytes bounds a copied file (Llama 3's tokenizer.json is 9 MB).
const maxCopiedBytes = 256 << 20

// QuantizeStats says what WriteQuantized did.
type QuantizeStats struct {
	Layers, Kept int   // linear layers quantized; tensors kept float
	Bytes        int64 // of the weight file written
}

// WriteQuantized quantizes the float checkpoint folder src by rounding to nearest (quant.Quantize,
// bits, groupSize and sym as there) and writes it to the existing, empty folder dst in GPTQ's
// layout: config.json with its quantization_config (quant_method gptq, desc_act false, the
// classic checkpoint format), model.safetensors with every transformer block's linear layers
// packed (qweight, qzeros, scales, g_idx) and the embeddings, norms and lm_head as stored, and
// the tokenizer's files. The llama family is quantized; a quantized src is refused.
func WriteQuantized(src, dst string, bits, groupSize int, sym bool) (*QuantizeStats, error) {
	f := quant.Format{Method: "gptq", Bits: bits, GroupSize: groupSize, Sym: sym}
	if err := f.Check(); err != nil {
		return nil, fmt.Errorf("checkpoint: %v", err)
	}
	cfg, err := ReadConfig(src)
	if err != nil {
		return nil, err
	}
	file := filepath.Join(src, ConfigFile)
	switch {
	case cfg.Quant != nil:
		return nil, fmt.Errorf("checkpoint: %s: the checkpoint is quantized already (%s %d-bit)", file, cfg.Quant.Method, cfg.Quant.Bits)
	case cfg.Arch != "llama":
		return nil, fmt.Errorf("checkpoint: %s: quantizing %s checkpoints is not supported (the llama family's are)", file, cfg.ModelType)
	}
	ck, err := Open(src)
	if err != nil {
		return nil, err
	}
	defer ck.Close()
	ws, err := ck.Tensors(cfg)
	if err != nil {
		return nil, err
	}
	st := &QuantizeStats{}
	out := map[string]*tensorio.Array{}
	for _, w := range ws.List {
		if !Quantizable(w.Name) {
			a, err := w.Array(w.DType)
			if err != nil {
				return nil, err
			}
			out[w.Name] = a
			st.Kept++
			continue
		}
		l, err := quantizeWeight(w, f)
		if err != nil {
			return nil, err
		}
		packed, err := quant.Pack(f, l)
		if err != nil {
			return nil, fmt.Errorf("checkpoint: %s: tensor %q: %v", w.File, w.Stored, strings.TrimPrefix(err.Error(), "quant: "))
		}
		for suffix, a := range packed {
			out[strings.TrimSuffix(w.Name, ".weight")+"."+suffix] = a
		}
		st.Layers++
	}
	if err := writeQuantConfig(src, dst, f); err != nil {
		return nil, err
	}
	path := filepath.Join(dst, WeightsFile)
	if err := tensorio.WriteSafetensorsFile(path, out, map[string]string{"format": "pt"}); err != nil {
		return nil, fmt.Errorf("checkpoint: %v", strings.TrimPrefix(err.Error(), "tensorio: "))
	}
	if fi, err := os.Stat(path); err == nil {
		st.Bytes = fi.Size()
	}
	for _, name := range CopiedFiles {
		if isNotExist(src, name) {
			continue
		}
		from, err := resolve(src, name)
		if err != nil {
			return nil, err
		}
		data, err := tensorio.ReadFile(from, maxCopiedBytes)
		if err == nil {
			err = os.WriteFile(filepath.Join(dst, name), data, 0o644)
		}
		if err != nil {
			return nil, fmt.Errorf("checkpoint: %v", strings.TrimPrefix(err.Error(), "tensorio: "))
		}
	}
	return st, nil
}

// quantizeWeight rounds one float linear weight to f's grid.
func quantizeWeight(w *Weight, f quant.Format) (*quant.Layer, error) {
	a, err := w.Array("f32")
	if err != nil {
		return nil, err
	}
	v := make([]float32, len(a.Data)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(a.Data[4*i:]))
	}
	if err := f.CheckSizes(w.Shape[0], w.Shape[1]); err != nil {
		return nil, fmt.Errorf("checkpoint: %s: tensor %q: %v", w.File, w.Stored, err)
	}
	l, err := quant.Quantize(v, w.Shape[0], w.Shape[1], f.Bits, f.GroupSize, f.Sym)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %s: tensor %q: %v", w.File, w.Stored, strings.TrimPrefix(err.Error(), "quant: "))
	}
	return l, nil
}

// writeQuantConfig writes src's config.json to dst with quantization_config added, every other
// field as it was.
func writeQuantConfig(src, dst string, f quant.Format) error {
	path, err := resolve(src, ConfigFile)
	if err != nil {
		return err
	}
	data, err := tensorio.ReadFile(path, maxConfigBytes)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return fmt.Errorf("checkpoint: %s: malformed JSON: %v", path, err)
	}
	qc, err := json.Marshal(map[string]any{
		"quant_method": "gptq", "bits": f.Bits, "group_size": f.GroupSize, "desc_act": false, "sym": f.Sym,
		"checkpoint_format": "gptq",
	})
	if err != nil {
		return err
	}
	m["quantization_config"] = qc
	out, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dst, ConfigFile), append(out, '\n'), 0o644)
}
