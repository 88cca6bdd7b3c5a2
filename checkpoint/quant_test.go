package checkpoint

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/quant"
	"github.com/gcomp/gcomp/tensorio"
	"github.com/google/go-cmp/cmp"
)

func TestQuantizationConfig(t *testing.T) {
	gptq := map[string]any{"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": true, "sym": true}
	awq := map[string]any{"quant_method": "awq", "bits": 4, "group_size": 64, "zero_point": true, "version": "GEMM"}
	for _, tt := range []struct {
		name string
		qc   any
		want *quant.Format
		err  string
	}{
		{"absent", nil, nil, ""},
		{"gptq act-order", gptq, &quant.Format{Method: "gptq", Bits: 4, GroupSize: 128, DescAct: true, Sym: true}, ""},
		{"gptq 8-bit per channel, defaults", map[string]any{"quant_method": "gptq", "bits": 8, "group_size": -1},
			&quant.Format{Method: "gptq", Bits: 8, GroupSize: -1, Sym: true}, ""},
		{"awq", awq, &quant.Format{Method: "awq", Bits: 4, GroupSize: 64}, ""},
		{"bits 3", with(gptq, "bits", 3), nil, "quantization_config: gptq bits 3 is not supported (4, 8)"},
		{"bits missing", with(gptq, "-bits", nil), nil, "quantization_config: bits is missing"},
		{"unknown method", with(gptq, "quant_method", "bitsandbytes"), nil, `quantization_config: quant_method "bitsandbytes" is not supported (gptq, awq)`},
		{"no method", map[string]any{"bits": 4}, nil, "quantization_config: quant_method is missing"},
		{"gptq v2", with(gptq, "checkpoint_format", "gptq_v2"), nil, `checkpoint_format "gptq_v2" is not supported (gptq)`},
		{"awq gemv", with(awq, "version", "gemv"), nil, `version "gemv" is not supported (gemm)`},
		{"awq without zero points", with(awq, "zero_point", false), nil, "zero_point false is not supported"},
		{"awq 8-bit", with(awq, "bits", 8), nil, "awq bits 8 is not supported (4)"},
		{"group size 0", with(gptq, "group_size", 0), nil, "group_size 0: want -1 or a positive size"},
		{"not an object", "gptq", nil, `quantization_config: want an object or null, have "gptq"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parseConfig("config.json", mustJSON(t, with(llamaJSON(), "quantization_config", tt.qc)))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.HasPrefix(err.Error(), "checkpoint: config.json: quantization_config: ") && !strings.Contains(tt.err, "want an object") {
					t.Fatalf("got %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, cfg.Quant); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
			if d := Describe(cfg); tt.want != nil && !strings.Contains(d, fmt.Sprintf(", linear layers %s int%d (", tt.want.Method, tt.want.Bits)) {
				t.Errorf("Describe: %s", d)
			}
		})
	}
	if _, err := parseConfig("config.json", mustJSON(t, with(gpt2JSON(), "quantization_config", gptq))); err == nil || !strings.Contains(err.Error(), "quantized gpt2 checkpoints are not supported") {
		t.Errorf("quantized gpt2: %v", err)
	}
}

// floatLlama writes the tiny Llama folder (bf16 weights, a tokenizer file) and returns its config.
func floatLlama(t *testing.T, dir string) *Config {
	t.Helper()
	cfg, err := parseConfig("config.json", mustJSON(t, llamaJSON()))
	if err != nil {
		t.Fatal(err)
	}
	writeFolder(t, dir, llamaJSON(), weightsOf(cfg, "bf16", nil), 1)
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(`{"model":{}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// A float folder quantized by WriteQuantized reads back as GPTQ: its config says so, every
// linear layer dequantizes to exactly what quant.Quantize made of the float weight, and every
// other tensor and the tokenizer are as they were.
func TestWriteQuantized(t *testing.T) {
	src := t.TempDir()
	cfg := floatLlama(t, src)
	ck, orig := openWeights(t, src, cfg)
	defer ck.Close()
	for _, tc := range []struct {
		bits, group int
		sym         bool
	}{{8, -1, true}, {8, 8, false}, {4, 8, false}, {4, 16, true}, {4, -1, false}} {
		t.Run(fmt.Sprintf("int%d_group%d_sym%v", tc.bits, tc.group, tc.sym), func(t *testing.T) {
			dst := t.TempDir()
			st, err := WriteQuantized(src, dst, tc.bits, tc.group, tc.sym)
			if err != nil {
				t.Fatal(err)
			}
			if st.Layers != 14 || st.Kept != 7 {
				t.Errorf("%d layers quantized, %d kept", st.Layers, st.Kept)
			}
			qcfg, err := ReadConfig(dst)
			if err != nil {
				t.Fatal(err)
			}
			want := &quant.Format{Method: "gptq", Bits: tc.bits, GroupSize: tc.group, Sym: tc.sym}
			if diff := cmp.Diff(want, qcfg.Quant); diff != "" {
				t.Fatalf("quantization_config (-want +got)\n%s", diff)
			}
			qck, ws := openWeights(t, dst, qcfg)
			defer qck.Close()
			for _, w := range orig.List {
				q := ws.Get(w.Name)
				a, err := w.Array("f32")
				if err != nil {
					t.Fatal(err)
				}
				if !Quantizable(w.Name) {
					b, err := q.Array(w.DType)
					if q.Quant != nil || err != nil || q.DType != w.DType || !bytes.Equal(b.Data, mustArray(t, w, w.DType).Data) {
						t.Errorf("%s: %v, %v", w.Name, q.Quant, err)
					}
					continue
				}
				l, err := quant.Quantize(decodeF32(a), w.Shape[0], w.Shape[1], tc.bits, tc.group, tc.sym)
				if err != nil {
					t.Fatal(err)
				}
				back, err := q.Array("f32")
				if err != nil {
					t.Fatal(err)
				}
				if q.Quant == nil || !slices.Equal(decodeF32(back), l.Dequantize()) {
					t.Fatalf("%s reads back to other weights", w.Name)
				}
			}
			if data, err := os.ReadFile(filepath.Join(dst, "tokenizer.json")); err != nil || string(data) != `{"model":{}}` {
				t.Errorf("tokenizer.json: %q, %v", data, err)
			}
		})
	}
	for _, tc := range []struct {
		name, src string
		bits      int
		want      string
	}{
		{"bits 3", src, 3, "gptq bits 3 is not supported"},
		{"no folder", filepath.Join(src, "none"), 4, "no such folder"},
	} {
		if _, err := WriteQuantized(tc.src, t.TempDir(), tc.bits, 8, false); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	dst := t.TempDir()
	if _, err := WriteQuantized(src, dst, 4, 8, false); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteQuantized(dst, t.TempDir(), 4, 8, false); err == nil || !strings.Contains(err.Error(), "quantized already") {
		t.Errorf("quantizing a quantized folder: %v", err)
	}
	g := t.TempDir()
	tinyGPT2(t, g, "f32")
	if _, err := WriteQuantized(g, t.TempDir(), 4, 8, false); err == nil || !strings.Contains(err.Error(), "quantizing gpt2 checkpoints is not supported") {
		t.Errorf("quantizing gpt2: %v", err)
	}
}

func mustArray(t *testing.T, w *Weight, dtype string) *tensorio.Array {
	t.Helper()
	a, err := w.Array(dtype)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// A quantized folder with bad packed tensors is one clear error, naming the file and the tensor.
func TestQuantizedTensorsErrors(t *testing.T) {
	src := t.TempDir()
	floatLlama(t, src)
	good := t.TempDir()
	if _, err := WriteQuantized(src, good, 4, 8, false); err != nil {
		t.Fatal(err)
	}
	tensors, _, err := tensorio.ReadSafetensorsFile(filepath.Join(good, WeightsFile))
	if err != nil {
		t.Fatal(err)
	}
	qcfg, err := ReadConfig(good)
	if err != nil {
		t.Fatal(err)
	}
	config := func() map[string]any {
		var m map[string]any
		data, _ := os.ReadFile(filepath.Join(good, ConfigFile))
		if err := jsonUnmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	const up = "model.layers.1.mlp.up_proj" // 24 outputs, 16 inputs: 2 groups of 8
	i32 := func(shape []int, v uint32) *tensorio.Array {
		a := &tensorio.Array{DType: "i32", Shape: shape, Data: make([]byte, 4*numel(shape))}
		for i := range numel(shape) {
			binary.LittleEndian.PutUint32(a.Data[4*i:], v)
		}
		return a
	}
	for _, tc := range []struct {
		name   string
		change func(m map[string]*tensorio.Array)
		want   string
		atLoad bool // found when the layer is read, not when the names are matched
	}{
		{"packed rows wrong", func(m map[string]*tensorio.Array) { m[up+".qweight"] = i32([]int{3, 24}, 0) },
			`tensor "model.layers.1.mlp.up_proj.qweight": shape [3 24], want [2 24] (gptq 4-bit, group size 8, 24 outputs, 16 inputs)`, false},
		{"zeros of wrong shape", func(m map[string]*tensorio.Array) { m[up+".qzeros"] = i32([]int{2, 24}, 0) },
			`tensor "model.layers.1.mlp.up_proj.qzeros": shape [2 24], want [2 3]`, false},
		{"zeros missing", func(m map[string]*tensorio.Array) { delete(m, up+".qzeros") },
			`tensor "model.layers.1.mlp.up_proj.qzeros" is missing`, false},
		{"scales dtype", func(m map[string]*tensorio.Array) { m[up+".scales"] = i32([]int{2, 24}, 0) },
			`tensor "model.layers.1.mlp.up_proj.scales": dtype i32, want F16`, false},
		{"float and packed", func(m map[string]*tensorio.Array) {
			m[up+".weight"] = encode("f32", []int{24, 16}, make([]float32, 24*16))
		},
			`"model.layers.1.mlp.up_proj.weight" is stored both as`, false},
		{"packed layer past the config", func(m map[string]*tensorio.Array) { m["model.layers.2.mlp.up_proj.qweight"] = i32([]int{2, 24}, 0) },
			"unexpected 1 tensor: model.layers.2.mlp.up_proj.qweight", false},
		{"g_idx out of range", func(m map[string]*tensorio.Array) { m[up+".g_idx"] = i32([]int{16}, 5) },
			`tensor "model.layers.1.mlp.up_proj.g_idx": element 0 is group 5, outside [0, 2)`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			m := map[string]*tensorio.Array{}
			for k, v := range tensors {
				m[k] = v
			}
			tc.change(m)
			writeFolder(t, dir, config(), m, 1)
			ck, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer ck.Close()
			ws, err := ck.Tensors(qcfg)
			if tc.atLoad {
				if err != nil {
					t.Fatal(err)
				}
				_, err = ws.Get(up + ".weight").Array("f32")
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), filepath.Join(dir, WeightsFile)) && !strings.Contains(tc.want, "unexpected") && !strings.Contains(tc.want, "both") {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// An AWQ folder (GEMM layout, no g_idx) reads back to its layers' weights, and a linear layer
// left float in a quantized folder is read as float.
func TestAWQFolder(t *testing.T) {
	src := t.TempDir()
	cfg := floatLlama(t, src)
	ck, ws := openWeights(t, src, cfg)
	defer ck.Close()
	f := quant.Format{Method: "awq", Bits: 4, GroupSize: 8}
	tensors := map[string]*tensorio.Array{}
	want := map[string][]float32{}
	const float = "model.layers.0.self_attn.o_proj.weight"
	for _, w := range ws.List {
		a := mustArray(t, w, "f32")
		if !Quantizable(w.Name) || w.Name == float {
			tensors[w.Name] = a
			continue
		}
		l, err := quant.Quantize(decodeF32(a), w.Shape[0], w.Shape[1], 4, 8, false)
		if err != nil {
			t.Fatal(err)
		}
		packed, err := quant.Pack(f, l)
		if err != nil {
			t.Fatal(err)
		}
		for s, p := range packed {
			tensors[strings.TrimSuffix(w.Name, "weight")+s] = p
		}
		want[w.Name] = l.Dequantize()
	}
	dir := t.TempDir()
	writeFolder(t, dir, with(llamaJSON(), "quantization_config", map[string]any{"quant_method": "awq", "bits": 4, "group_size": 8, "version": "gemm", "zero_point": true}), tensors, 2)
	qcfg, err := ReadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	qck, qws := openWeights(t, dir, qcfg)
	defer qck.Close()
	if len(want) != 13 {
		t.Fatalf("%d layers packed", len(want))
	}
	for name, v := range want {
		w := qws.Get(name)
		if w.Quant == nil || w.Quant.Method != "awq" || !slices.Equal(decodeF32(mustArray(t, w, "f32")), v) {
			t.Errorf("%s does not read back", name)
		}
	}
	if w := qws.Get(float); w.Quant != nil || !slices.Equal(w.Shape, []int{16, 16}) {
		t.Errorf("the float layer: %+v", w)
	}
}
