//go:build unix

package checkpoint

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gcomp/gcomp/tensorio"
)

// TestOpenErrors breaks a good folder (GPT-2, two shards) in one way per case: each is one error
// naming the file and the tensor or shard, and nothing is left open.
func TestOpenErrors(t *testing.T) {
	defer func(old time.Duration) { tensorio.FIFOWait = old }(tensorio.FIFOWait)
	tensorio.FIFOWait = 50 * time.Millisecond
	cfg, err := parseConfig("config.json", mustJSON(t, gpt2JSON()))
	if err != nil {
		t.Fatal(err)
	}
	const shard1, shard2 = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "x.safetensors"), []byte("anything"), 0o644)
	index := func(dir string) map[string]any {
		var m map[string]any
		b, _ := os.ReadFile(filepath.Join(dir, IndexFile))
		jsonUnmarshal(b, &m)
		return m
	}
	setShard := func(dir, tensor, file string) {
		m := index(dir)
		m["weight_map"].(map[string]any)[tensor] = file
		writeJSON(t, filepath.Join(dir, IndexFile), m)
	}
	tests := []struct {
		name   string
		break_ func(t *testing.T, dir string)
		want   string // after "checkpoint: "; DIR stands for the folder
	}{
		{"no weights", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, IndexFile))
			os.WriteFile(filepath.Join(dir, "pytorch_model.bin"), nil, 0o644)
		}, "DIR: no model.safetensors nor model.safetensors.index.json (pytorch_model.bin is not read: convert it to safetensors)"},
		{"shard absent", func(t *testing.T, dir string) { os.Remove(filepath.Join(dir, shard2)) },
			`DIR/model.safetensors.index.json: shard "` + shard2 + `": DIR/` + shard2 + ": no such file"},
		{"shard leaves by ..", func(t *testing.T, dir string) { setShard(dir, "wte.weight", "../x.safetensors") },
			`DIR/model.safetensors.index.json: shard "../x.safetensors": file name "../x.safetensors" leaves the folder DIR`},
		{"shard absolute", func(t *testing.T, dir string) { setShard(dir, "wte.weight", filepath.Join(outside, "x.safetensors")) },
			`is absolute; it must be relative to DIR`},
		{"shard leaves by a symbolic link", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, shard2))
			os.Symlink(filepath.Join(outside, "x.safetensors"), filepath.Join(dir, shard2))
		}, `DIR/model.safetensors.index.json: shard "` + shard2 + `": file name "` + shard2 + `" resolves (through a symbolic link) to`},
		{"shard is a FIFO", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, shard2))
			syscall.Mkfifo(filepath.Join(dir, shard2), 0o644)
		}, "checkpoint: DIR/" + shard2 + ": a named pipe that no writer opened"},
		{"shard not safetensors", func(t *testing.T, dir string) { setShard(dir, "wte.weight", "pytorch_model.bin") },
			`DIR/model.safetensors.index.json: weight_map: tensor "wte.weight": shard "pytorch_model.bin" is not a .safetensors file`},
		{"index malformed", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, IndexFile), []byte(`{"weight_map": {`), 0o644)
		},
			"DIR/model.safetensors.index.json: malformed JSON"},
		{"index without weight_map", func(t *testing.T, dir string) {
			writeJSON(t, filepath.Join(dir, IndexFile), map[string]any{"metadata": nil})
		},
			"DIR/model.safetensors.index.json: weight_map is missing"},
		{"index weight_map empty", func(t *testing.T, dir string) {
			writeJSON(t, filepath.Join(dir, IndexFile), map[string]any{"weight_map": map[string]any{}})
		}, "DIR/model.safetensors.index.json: weight_map lists no tensors"},
		{"index lists a tensor twice", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, IndexFile), []byte(`{"weight_map": {"wte.weight": "`+shard1+`", "wte.weight": "`+shard2+`"}}`), 0o644)
		}, `DIR/model.safetensors.index.json: weight_map lists tensor "wte.weight" twice`},
		{"index places a tensor in the wrong shard", func(t *testing.T, dir string) { setShard(dir, "wte.weight", shard1) },
			`DIR/model.safetensors.index.json lists tensor "wte.weight" in shard "` + shard1 + `", which does not hold it`},
		{"index lists a tensor no shard holds", func(t *testing.T, dir string) { setShard(dir, "h.9.ln_1.weight", shard2) },
			`DIR/model.safetensors.index.json lists tensor "h.9.ln_1.weight" in shard "` + shard2 + `", which does not hold it`},
		{"shard holds a tensor the index does not list", func(t *testing.T, dir string) {
			m := index(dir)
			delete(m["weight_map"].(map[string]any), "wte.weight")
			writeJSON(t, filepath.Join(dir, IndexFile), m)
		}, `DIR/` + shard2 + ` holds tensor "wte.weight", which DIR/model.safetensors.index.json does not list there`},
		{"tensor in two shards", func(t *testing.T, dir string) {
			copyTensor(t, filepath.Join(dir, shard2), filepath.Join(dir, shard1), "wte.weight")
		}, `tensor "wte.weight" is in two shards: DIR/` + shard1 + ` and DIR/` + shard2},
		{"truncated shard", func(t *testing.T, dir string) { truncate(t, filepath.Join(dir, shard2), -5) },
			"DIR/" + shard2 + `: tensor "wte.weight": data_offsets`},
		{"header longer than the file", func(t *testing.T, dir string) {
			p := filepath.Join(dir, shard1)
			b, _ := os.ReadFile(p)
			binary.LittleEndian.PutUint64(b, uint64(len(b)))
			os.WriteFile(p, b, 0o644)
		}, "DIR/" + shard1 + ": truncated header: want"},
		{"header length past the limit", func(t *testing.T, dir string) {
			p := filepath.Join(dir, shard1)
			b, _ := os.ReadFile(p)
			binary.LittleEndian.PutUint64(b, 1<<40)
			os.WriteFile(p, b, 0o644)
		}, "DIR/" + shard1 + ": header length 1099511627776 exceeds the limit"},
		{"unknown dtype in a header", func(t *testing.T, dir string) {
			p := filepath.Join(dir, shard1)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, []byte(strings.Replace(string(b), `"F32"`, `"F8_E9M9"`, 1)), 0o644)
		}, "DIR/" + shard1 + `: tensor "h.0.attn.c_attn.bias": unknown dtype "F8_E9M9"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFolder(t, dir, gpt2JSON(), weightsOf(cfg, "f32", func(n string) string { return strings.TrimPrefix(n, "transformer.") }), 2)
			if _, err := Open(dir); err != nil {
				t.Fatalf("the unbroken folder: %v", err)
			}
			tt.break_(t, dir)
			ck, err := Open(dir)
			want := strings.ReplaceAll(tt.want, "DIR", dir)
			if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "checkpoint: ") {
				t.Errorf("Open = %v, %v\nwant an error containing %q", ck, err, want)
			}
		})
	}
}

// TestTensorsErrors checks each disagreement between the weights and the config.
func TestTensorsErrors(t *testing.T) {
	tests := []struct {
		name   string
		config map[string]any
		change func(m map[string]*tensorio.Array)
		want   string // DIR stands for the folder
	}{
		{"shape disagrees", llamaJSON(), func(m map[string]*tensorio.Array) {
			m["model.layers.1.self_attn.k_proj.weight"] = encode("bf16", []int{16, 16}, make([]float32, 256))
		}, `DIR/model.safetensors: tensor "model.layers.1.self_attn.k_proj.weight" has shape [16 16], config.json wants [8 16]`},
		{"config of the wrong size", with(llamaJSON(), "num_key_value_heads", 4), nil,
			`tensor "model.layers.0.self_attn.k_proj.weight" has shape [8 16], config.json wants [16 16]`},
		{"unsupported dtype", llamaJSON(), func(m map[string]*tensorio.Array) {
			m["model.norm.weight"] = &tensorio.Array{DType: "f64", Shape: []int{16}, Data: make([]byte, 128)}
		}, `DIR/model.safetensors: tensor "model.norm.weight" has dtype F64 (F32, F16 and BF16 are read)`},
		{"missing and unexpected", llamaJSON(), func(m map[string]*tensorio.Array) {
			delete(m, "lm_head.weight")
			delete(m, "model.layers.0.mlp.up_proj.weight")
			m["model.layers.0.mlp.upp_proj.weight"] = m["model.layers.0.mlp.down_proj.weight"]
		}, "missing 2 tensors: model.layers.0.mlp.up_proj.weight, lm_head.weight; unexpected 1 tensor: model.layers.0.mlp.upp_proj.weight"},
		{"qwen2 without biases", with(llamaJSON(), "model_type", "qwen2"), func(m map[string]*tensorio.Array) {
			for k := range m {
				if strings.HasSuffix(k, ".bias") {
					delete(m, k)
				}
			}
		}, "missing 6 tensors: model.layers.0.self_attn.q_proj.bias, model.layers.0.self_attn.k_proj.bias"},
		{"the same tensor twice", gpt2JSON(), func(m map[string]*tensorio.Array) { m["wte.weight"] = m["transformer.wte.weight"] },
			`"transformer.wte.weight" and "wte.weight" are the same tensor transformer.wte.weight`},
		{"many unexpected", llamaJSON(), func(m map[string]*tensorio.Array) {
			for i := range 10 {
				m["extra."+string(rune('a'+i))] = encode("bf16", []int{1}, []float32{0})
			}
		}, "unexpected 10 tensors: extra.a, extra.b, extra.c, extra.d, extra.e, extra.f, extra.g, extra.h and 2 more"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			good, err := parseConfig("config.json", mustJSON(t, with(tt.config, "num_key_value_heads", 2)))
			if err != nil {
				t.Fatal(err)
			}
			m := weightsOf(good, "bf16", nil)
			if tt.change != nil {
				tt.change(m)
			}
			writeFolder(t, dir, tt.config, m, 1)
			cfg, err := ReadConfig(dir)
			if err != nil {
				t.Fatal(err)
			}
			ck, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer ck.Close()
			ws, err := ck.Tensors(cfg)
			want := strings.ReplaceAll(tt.want, "DIR", dir)
			if err == nil || !strings.HasPrefix(err.Error(), "checkpoint: "+dir+" does not match config.json") || !strings.Contains(err.Error(), want) {
				t.Errorf("Tensors = %v, %v\nwant an error containing %q", ws, err, want)
			}
		})
	}
}

// TestHubSnapshot reads a folder laid out as Hugging Face's hub cache keeps it: the snapshot's
// files are links into the repository's blobs, which is allowed; a link out of the repository is
// not.
func TestHubSnapshot(t *testing.T) {
	repo := filepath.Join(t.TempDir(), "models--tiny--gpt2")
	src := t.TempDir()
	tinyGPT2(t, src, "f32")
	snap := filepath.Join(repo, "snapshots", "0123abcd")
	os.MkdirAll(snap, 0o755)
	os.MkdirAll(filepath.Join(repo, "blobs"), 0o755)
	for i, name := range []string{ConfigFile, WeightsFile} {
		blob := filepath.Join(repo, "blobs", string(rune('a'+i)))
		os.Rename(filepath.Join(src, name), blob)
		if err := os.Symlink(filepath.Join("..", "..", "blobs", string(rune('a'+i))), filepath.Join(snap, name)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ReadConfig(snap)
	if err != nil {
		t.Fatal(err)
	}
	ck, _ := openWeights(t, snap, got)
	ck.Close()
	// A link that leaves the repository is refused.
	outside := filepath.Join(t.TempDir(), "w.safetensors")
	os.Rename(filepath.Join(repo, "blobs", "b"), outside)
	os.Remove(filepath.Join(snap, WeightsFile))
	os.Symlink(outside, filepath.Join(snap, WeightsFile))
	if _, err := Open(snap); err == nil || !strings.Contains(err.Error(), "resolves (through a symbolic link) to "+outside) {
		t.Errorf("Open(link out of the repository) = %v", err)
	}
}

// copyTensor adds tensor name of the file from to the file to.
func copyTensor(t *testing.T, from, to, name string) {
	a, _, err := tensorio.ReadSafetensorsFile(from)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := tensorio.ReadSafetensorsFile(to)
	if err != nil {
		t.Fatal(err)
	}
	b[name] = a[name]
	if err := tensorio.WriteSafetensorsFile(to, b, nil); err != nil {
		t.Fatal(err)
	}
}

// truncate cuts n bytes (n < 0) off the end of a file.
func truncate(t *testing.T, path string, n int64) {
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, st.Size()+n); err != nil {
		t.Fatal(err)
	}
}

// TestFileCutUnderTheMapping cuts a weight file after it is opened: reading a weight faults on the
// mapping, and the fault is an error, not a crash.
func TestFileCutUnderTheMapping(t *testing.T) {
	dir := t.TempDir()
	ck, ws := openWeights(t, dir, tinyGPT2(t, dir, "bf16"))
	defer ck.Close()
	if err := os.Truncate(filepath.Join(dir, WeightsFile), 0); err != nil {
		t.Fatal(err)
	}
	_, err := ws.Load("f32")
	if want := `checkpoint: ` + filepath.Join(dir, WeightsFile) + `: tensor "transformer.wte.weight": the file changed while it was read`; err == nil || err.Error() != want {
		t.Errorf("Load = %v, want %q", err, want)
	}
}
