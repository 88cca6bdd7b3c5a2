package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/checkpoint"
	"github.com/gcomp/gcomp/quant"
	"github.com/gcomp/gcomp/tensorio"
)

// gcomp quantize writes a GPTQ folder that reads back with its quantization_config and generates;
// bad flags and outputs in the way are one error each, exit status 1, nothing written.
func TestQuantizeCommand(t *testing.T) {
	src, _ := lmFolder(t, "llama")
	base := t.TempDir()
	out := filepath.Join(base, "sub", "llama-int4")
	run := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := Main(append([]string{"quantize"}, args...), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	code, stdout, stderr := run(src, "--int4", "--group", "32", "-o", out)
	if code != 0 || !strings.Contains(stdout, "14 linear layers quantized to GPTQ int4 (groups of 32, asymmetric), 7 tensors kept as stored") {
		t.Fatalf("exit %d: %s%s", code, stdout, stderr)
	}
	cfg, err := checkpoint.ReadConfig(out)
	if err != nil {
		t.Fatal(err)
	}
	if want := (quant.Format{Method: "gptq", Bits: 4, GroupSize: 32}); cfg.Quant == nil || *cfg.Quant != want {
		t.Fatalf("quantization_config %+v", cfg.Quant)
	}
	ids := filepath.Join(base, "ids.json")
	var so, se bytes.Buffer
	if code := Main([]string{"generate", out, "--prompt-ids", "1,5,9", "--device", "ref", "--temperature", "0", "--max-new-tokens", "4", "--ids-out", ids, "--stats"}, &so, &se); code != 0 {
		t.Fatalf("generate from the quantized folder: exit %d: %s", code, se.String())
	}
	// The 14 int4 layers' 61,440 weights are half a byte each, with an f32 scale and a u8 zero for
	// each of their 1,920 groups of 32 (9,600 B); the embeddings, lm_head and norms' 41,280 are f32.
	if want := "weights on the device: 205440 B for 102720 parameters (2.000 bytes/parameter)"; !strings.Contains(se.String(), want) || strings.Contains(se.String(), "dequantized at load") {
		t.Fatalf("--stats: %s", se.String())
	}
	var got struct {
		Generated []int `json:"generated_ids"`
	}
	if data, err := os.ReadFile(ids); err != nil || json.Unmarshal(data, &got) != nil || len(got.Generated) != 4 {
		t.Fatalf("--ids-out: %v %s", err, data)
	}

	file := filepath.Join(base, "file")
	os.WriteFile(file, []byte("x"), 0o644)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no bits", []string{src, "-o", filepath.Join(base, "a")}, "give --int8 or --int4 (one of them)"},
		{"both bits", []string{src, "--int8", "--int4", "-o", filepath.Join(base, "a")}, "give --int8 or --int4"},
		{"group 0", []string{src, "--int8", "--group", "0", "-o", filepath.Join(base, "a")}, "--group 0: want -1"},
		{"no -o", []string{src, "--int8"}, "-o OUT_DIR is required"},
		{"exists", []string{src, "--int8", "-o", out}, "exists (give --force to replace it)"},
		{"a file", []string{src, "--int8", "--force", "-o", file}, "exists and is not a folder"},
		{"holds the source", []string{src, "--int8", "--force", "-o", filepath.Dir(src)}, "holds the model folder"},
		{"the source", []string{src, "--int8", "--force", "-o", src}, "holds the model folder"},
		{"group does not divide", []string{src, "--int4", "--group", "48", "-o", filepath.Join(base, "b", "c")}, ""},
		{"quantized already", []string{out, "--int8", "-o", filepath.Join(base, "d", "e")}, "quantized already"},
		{"no model", []string{filepath.Join(base, "none"), "--int8", "-o", filepath.Join(base, "f", "g")}, "no such folder"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(tc.args...)
			if tc.want == "" { // a group that does not divide the inputs is a shorter last group: it works
				if code != 0 {
					t.Fatalf("exit %d: %s", code, stderr)
				}
				return
			}
			if code != 1 || stdout != "" || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 {
				t.Errorf("exit %d, stdout %q, stderr %q, want %q", code, stdout, stderr, tc.want)
			}
		})
	}
	for _, dir := range []string{filepath.Join(base, "a"), filepath.Join(base, "d"), filepath.Join(base, "f")} {
		if _, err := os.Lstat(dir); err == nil {
			t.Errorf("%s was made by a failed command", dir)
		}
	}
	entries, _ := os.ReadDir(filepath.Join(base, "sub"))
	if len(entries) != 1 {
		t.Errorf("%s holds %d entries, want only the output (no temporaries)", filepath.Join(base, "sub"), len(entries))
	}

	// --force replaces the folder whole: nothing of the old one stays.
	os.WriteFile(filepath.Join(out, "stale"), []byte("x"), 0o644)
	if code, _, stderr := run(src, "--int8", "--sym", "--group", "-1", "-o", out, "--force"); code != 0 {
		t.Fatalf("--force: %s", stderr)
	}
	cfg, err = checkpoint.ReadConfig(out)
	if _, serr := os.Stat(filepath.Join(out, "stale")); err != nil || cfg.Quant.Bits != 8 || !cfg.Quant.Sym || cfg.Quant.GroupSize != -1 || serr == nil {
		t.Errorf("after --force: %+v, %v, stale file %v", cfg.Quant, err, serr)
	}
	if entries, _ := os.ReadDir(filepath.Join(base, "sub")); len(entries) != 1 {
		t.Errorf("after --force %d entries beside the output", len(entries))
	}
}

// gcomp generate on a quantized folder with bad packed tensors or an unread quantization_config
// fails with one line naming the file and the tensor or field, exit status 1.
func TestGenerateQuantizedBadInput(t *testing.T) {
	src, _ := lmFolder(t, "llama")
	good := filepath.Join(t.TempDir(), "q")
	var so, se bytes.Buffer
	if code := Main([]string{"quantize", src, "--int4", "--group", "32", "-o", good}, &so, &se); code != 0 {
		t.Fatal(se.String())
	}
	tensors, meta, err := tensorio.ReadSafetensorsFile(filepath.Join(good, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	config, err := os.ReadFile(filepath.Join(good, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	const layer = "model.layers.0.mlp.down_proj" // 64 outputs, 96 inputs: 3 groups
	for _, tc := range []struct {
		name   string
		config func(string) string
		change func(map[string]*tensorio.Array)
		want   string
	}{
		{"packed sizes wrong", nil, func(m map[string]*tensorio.Array) {
			m[layer+".qweight"] = &tensorio.Array{DType: "i32", Shape: []int{11, 64}, Data: make([]byte, 4*11*64)}
		}, `model.safetensors: tensor "model.layers.0.mlp.down_proj.qweight": shape [11 64], want [12 64]`},
		{"g_idx out of range", nil, func(m map[string]*tensorio.Array) {
			m[layer+".g_idx"] = &tensorio.Array{DType: "i32", Shape: []int{96}, Data: bytes.Repeat([]byte{3, 0, 0, 0}, 96)}
		}, `model.safetensors: tensor "model.layers.0.mlp.down_proj.g_idx": element 0 is group 3, outside [0, 3)`},
		{"zeros of wrong shape", nil, func(m map[string]*tensorio.Array) {
			m[layer+".qzeros"] = &tensorio.Array{DType: "i32", Shape: []int{3, 64}, Data: make([]byte, 4*3*64)}
		}, `tensor "model.layers.0.mlp.down_proj.qzeros": shape [3 64], want [3 8]`},
		{"bits 3", func(s string) string { return strings.Replace(s, `"bits": 4`, `"bits": 3`, 1) }, nil,
			"config.json: quantization_config: gptq bits 3 is not supported (4, 8)"},
		{"unknown quant_method", func(s string) string { return strings.Replace(s, `"quant_method": "gptq"`, `"quant_method": "hqq"`, 1) }, nil,
			`config.json: quantization_config: quant_method "hqq" is not supported (gptq, awq)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := string(config)
			if tc.config != nil {
				if cfg = tc.config(cfg); cfg == string(config) {
					t.Fatal("the config change did not apply")
				}
			}
			m := map[string]*tensorio.Array{}
			for k, v := range tensors {
				m[k] = v
			}
			if tc.change != nil {
				tc.change(m)
			}
			if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := tensorio.WriteSafetensorsFile(filepath.Join(dir, "model.safetensors"), m, meta); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			code := Main([]string{"generate", dir, "--prompt-ids", "1,2", "--device", "ref", "--max-new-tokens", "1"}, &stdout, &stderr)
			if code != 1 || !strings.Contains(stderr.String(), tc.want) || strings.Count(stderr.String(), "\n") != 1 {
				t.Errorf("exit %d, stderr %q, want %q", code, stderr.String(), tc.want)
			}
		})
	}
}
