package lm

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/checkpoint"
	"github.com/gcomp/gcomp/internal/lmtest"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes"
	"github.com/gcomp/gcomp/quant"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/tensorio"
)

// A quantized folder runs with its linear layers quantized on the device: the decode program's
// parameters for them are the integers (u8), their f32 scales and u8 zero points, no f32 weight;
// no bind-time kernel dequantizes them; and the logits of prefill and every decode step equal,
// within f32 rounding, those of the same folder dequantized at load (the float route: the same
// numbers two ways, which checks the layout conversion element by element).
func TestQuantizedOnDevice(t *testing.T) {
	r := reference(t)
	c := &r.Cases[1] // llama, f32: hidden 64, intermediate 96
	src := t.TempDir()
	if err := lmtest.WriteFolder(src, c, 1); err != nil {
		t.Fatal(err)
	}
	for _, q := range []struct {
		bits, group int
		sym         bool
		wantGroup   map[int]int // the op's group by K (64 for the attention and gate/up, 96 for down)
	}{
		{8, 128, false, map[int]int{64: 64, 96: 96}}, // per output channel: the group exceeds K
		{8, 32, true, map[int]int{64: 32, 96: 32}},
		{4, 32, false, map[int]int{64: 32, 96: 32}},
		{4, -1, true, map[int]int{64: 64, 96: 96}},
	} {
		name := fmt.Sprintf("int%d_group%d_sym%v", q.bits, q.group, q.sym)
		dir := filepath.Join(t.TempDir(), name)
		if _, err := checkpoint.WriteQuantized(src, mkdir(t, dir), q.bits, q.group, q.sym); err != nil {
			t.Fatal(err)
		}
		fused, _, err := LoadCheckpoint(dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(fused.DequantizedAtLoad()) != 0 {
			t.Fatalf("%s: dequantized at load: %v", name, fused.DequantizedAtLoad())
		}
		float, _, err := loadCheckpoint(dir, 0, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, dev := range []string{"ref", "sim"} {
			t.Run(name+"/"+dev, func(t *testing.T) { sameLogits(t, fused, float, dev, c, q.bits, q.wantGroup, 14) })
		}
	}
}

// sameLogits opens fused and float on dev, checks fused's decode program (its quantized layers'
// parameters, no bind-time kernel on a device) and that the two give the same logits, within f32
// rounding, for the prompt and 8 decode steps of c.
func sameLogits(t *testing.T, fused, float *Model, dev string, c *lmtest.Case, bits int, wantGroup map[int]int, layers int) {
	ef, err := fused.Open(EngineOptions{Device: dev, NoSimChecks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	checkQuantizedParams(t, ef.DecodeGraph(), bits, wantGroup, fused.DequantizedAtLoad(), layers)
	if dev != "ref" {
		s, err := ef.DecodeStats()
		if err != nil {
			t.Fatal(err)
		}
		if s.BindKernels != 0 {
			t.Fatalf("%d bind-time kernels: the weights are dequantized once at bind time", s.BindKernels)
		}
	}
	ed, err := float.Open(EngineOptions{Device: dev, NoSimChecks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ed.Close()
	ctx := context.Background()
	a, err := ef.Prefill(ctx, [][]int{c.Prompt})
	if err != nil {
		t.Fatal(err)
	}
	b, err := ed.Prefill(ctx, [][]int{c.Prompt})
	if err != nil {
		t.Fatal(err)
	}
	for k, s := range c.Steps[:8] {
		if d := maxRelDiff(a[0], b[0]); d > 1e-5 {
			t.Fatalf("step %d: the fused logits differ from the dequantized-at-load ones by %.3g of the largest", k, d)
		}
		if a, err = ef.Decode(ctx, []int{s.Argmax}, []int{len(c.Prompt) + k}); err != nil {
			t.Fatal(err)
		}
		if b, err = ed.Decode(ctx, []int{s.Argmax}, []int{len(c.Prompt) + k}); err != nil {
			t.Fatal(err)
		}
	}
}

// checkQuantizedParams checks g's parameters: every quantizable layer NAME is NAME_q (u8, K/2
// bytes a row for 4 bits), NAME_scale (f32) and NAME_zero (u8) of K/group columns, and no f32
// NAME, except the layers atLoad; want is the number of quantized layers.
func checkQuantizedParams(t *testing.T, g *ir.Graph, bits int, wantGroup map[int]int, atLoad []string, want int) {
	t.Helper()
	layers := 0
	for _, p := range g.Params() {
		if checkpoint.Quantizable(p.Name) != slices.Contains(atLoad, p.Name) {
			t.Fatalf("%s is a %s parameter: dequantized at load", p.Name, p.Type)
		}
		base, ok := strings.CutSuffix(p.Name, "_q")
		if !ok {
			continue
		}
		layers++
		d := g.Lookup(base + "_scale")
		z := g.Lookup(base + "_zero")
		if d == nil || z == nil {
			t.Fatalf("%s without its scales or zero points", p.Name)
		}
		n, k := d.Type.Shape[0], p.Type.Shape[1]*8/bits
		wantQ := ir.T(ir.U8, n, k*bits/8)
		wantS := ir.T(ir.F32, n, k/wantGroup[k])
		if !p.Type.Equal(wantQ) || !d.Type.Equal(wantS) || !z.Type.Equal(ir.T(ir.U8, n, k/wantGroup[k])) {
			t.Fatalf("%s: %s, %s, %s; want %s, %s and u8 zero points", base, p.Type, d.Type, z.Type, wantQ, wantS)
		}
	}
	if layers != want {
		t.Fatalf("%d quantized layers in the decode program, want %d", layers, want)
	}
}

// maxRelDiff is the largest |a − b| over the largest |b|.
func maxRelDiff(a, b []float32) float64 {
	var d, m float64
	for i := range a {
		d = max(d, math.Abs(float64(a[i])-float64(b[i])))
		m = max(m, math.Abs(float64(b[i])))
	}
	return d / m
}

// A layer goes to the device quantized when its groups are the op's contiguous runs along K, or
// become so with its input channels sorted by group (act-order); a group size that does not
// divide K, groups of unequal sizes, an odd K at 4 bits and bits other than the folder's are
// dequantized at load.
func TestInputOrder(t *testing.T) {
	layer := func(bits, k int, groups []int32, g int) *quant.Layer {
		return &quant.Layer{Bits: bits, N: 1, K: k, G: g, Group: groups}
	}
	const atLoad = "at load"
	for _, c := range []struct {
		name string
		l    *quant.Layer
		qc   QuantConfig
		want string // the permutation, "[]" for none, or atLoad
	}{
		{"contiguous", layer(4, 8, quant.DefaultGroups(8, 4), 2), QuantConfig{4, 4}, "[]"},
		{"per channel", layer(8, 8, quant.DefaultGroups(8, -1), 1), QuantConfig{8, -1}, "[]"},
		{"group above K", layer(8, 8, quant.DefaultGroups(8, 16), 1), QuantConfig{8, 16}, "[]"},
		{"act-order", layer(4, 8, []int32{0, 1, 0, 0, 1, 1, 0, 1}, 2), QuantConfig{4, 4}, "[0 2 3 6 1 4 5 7]"},
		{"act-order, groups in reverse", layer(8, 6, []int32{2, 2, 1, 1, 0, 0}, 3), QuantConfig{8, 2}, "[4 5 2 3 0 1]"},
		{"act-order, unequal groups", layer(4, 8, []int32{0, 1, 0, 0, 1, 1, 0, 0}, 2), QuantConfig{4, 4}, atLoad},
		{"group does not divide K", layer(8, 10, quant.DefaultGroups(10, 4), 3), QuantConfig{8, 4}, atLoad},
		{"odd K at 4 bits", layer(4, 7, quant.DefaultGroups(7, -1), 1), QuantConfig{4, -1}, atLoad},
		{"other bits", layer(4, 8, quant.DefaultGroups(8, 4), 2), QuantConfig{8, 4}, atLoad},
		{"float model", layer(4, 8, quant.DefaultGroups(8, 4), 2), QuantConfig{}, atLoad},
		{"zero-size K", layer(8, 0, nil, 1), QuantConfig{8, 4}, atLoad},
	} {
		perm, ok := inputOrder(c.l, c.qc)
		got := fmt.Sprint(perm)
		if !ok {
			got = atLoad
		}
		if got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

// An act-order layer permuted: column j holds the input channel perm[j], every row alike; the
// dequantized permuted layer is the original one's columns in that order.
func TestPermuteInputs(t *testing.T) {
	l := &quant.Layer{Bits: 4, N: 2, K: 4, G: 2, Q: []uint8{1, 2, 3, 4, 5, 6, 7, 8},
		Scales: []float32{0.5, 2, -1, 0.25}, Zeros: []uint8{8, 0, 3, 15}, Group: []int32{1, 0, 0, 1}}
	perm, ok := inputOrder(l, QuantConfig{4, 2})
	if !ok || fmt.Sprint(perm) != "[1 2 0 3]" {
		t.Fatalf("order %v %v", perm, ok)
	}
	p := permuteInputs(l, perm)
	if got, want := fmt.Sprint(p.Q, p.Group), "[2 3 1 4 6 7 5 8] [0 0 1 1]"; got != want {
		t.Errorf("permuted %s, want %s", got, want)
	}
	w, pw := l.Dequantize(), p.Dequantize()
	for n := range l.N {
		for j, k := range perm {
			if pw[n*l.K+j] != w[n*l.K+k] {
				t.Errorf("row %d column %d: %v, want channel %d's %v", n, j, pw[n*l.K+j], k, w[n*l.K+k])
			}
		}
	}
	if _, ok := inputOrder(p, QuantConfig{4, 2}); !ok {
		t.Error("the permuted layer's groups are not contiguous")
	}
}

// The op's layout of a canonical layer: 4-bit values two a byte, even k in the low nibble.
func TestOpLayout(t *testing.T) {
	l := &quant.Layer{Bits: 4, N: 2, K: 4, G: 2, Q: []uint8{1, 2, 15, 0, 7, 8, 9, 10},
		Scales: []float32{0.5, 2, -1, 0.25}, Zeros: []uint8{8, 0, 3, 15}, Group: []int32{0, 0, 1, 1}}
	ts := opLayout("w", l)
	if got, want := fmt.Sprint(ts["w_q"].I), "[33 15 135 169]"; got != want {
		t.Errorf("q %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(ts["w_scale"].F, ts["w_zero"].I), "[0.5 2 -1 0.25] [8 0 3 15]"; got != want {
		t.Errorf("scale, zero %s, want %s", got, want)
	}
	l.Bits, l.Q = 8, []uint8{200, 1, 2, 3, 4, 5, 6, 255}
	if got, want := fmt.Sprint(opLayout("w", l)["w_q"].I), "[200 1 2 3 4 5 6 255]"; got != want {
		t.Errorf("8-bit q %s, want %s", got, want)
	}
}

// A GPTQ folder with act-order: the layer whose g_idx is not k / group_size goes to the device
// quantized too, its input channels sorted by group (NAME_perm) and its input gathered by the same
// permutation before the fused GEMV; nothing is dequantized at load, and the logits are the
// all-dequantized route's.
func TestQuantizedActOrder(t *testing.T) {
	r := reference(t)
	c := &r.Cases[1]
	src, dir := t.TempDir(), t.TempDir()
	if err := lmtest.WriteFolder(src, c, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := checkpoint.WriteQuantized(src, dir, 4, 32, false); err != nil {
		t.Fatal(err)
	}
	plain, _, err := LoadCheckpoint(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Two layers' input channels are shuffled among their groups as GPTQ's act-order does
	// (g_idx[k] = pos[k] / group for a permutation pos), and config.json says desc_act.
	permuted := []string{"model.layers.0.self_attn.q_proj", "model.layers.1.mlp.down_proj"}
	file := filepath.Join(dir, checkpoint.WeightsFile)
	ts, meta, err := tensorio.ReadSafetensorsFile(file)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(28, 1))
	for _, name := range permuted {
		gi := ts[name+".g_idx"].Data
		for k, pos := range rng.Perm(len(gi) / 4) {
			binary.LittleEndian.PutUint32(gi[4*k:], uint32(pos/32))
		}
	}
	if err := tensorio.WriteSafetensorsFile(file, ts, meta); err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(dir, checkpoint.ConfigFile)
	data, err := os.ReadFile(cfgFile)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["quantization_config"].(map[string]any)["desc_act"] = true
	if data, err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgFile, data, 0o644); err != nil {
		t.Fatal(err)
	}

	fused, _, err := LoadCheckpoint(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := fused.DequantizedAtLoad(); len(got) != 0 {
		t.Fatalf("dequantized at load: %v", got)
	}
	var perms []string
	for name := range fused.weights {
		if base, ok := strings.CutSuffix(name, ".weight_perm"); ok {
			perms = append(perms, base)
		}
	}
	if slices.Sort(perms); !slices.Equal(perms, permuted) {
		t.Fatalf("layers loaded permuted: %v, want %v", perms, permuted)
	}
	float, _, err := loadCheckpoint(dir, 0, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, dev := range []string{"ref", "sim"} {
		t.Run(dev, func(t *testing.T) { sameLogits(t, fused, float, dev, c, 4, map[int]int{64: 32, 96: 32}, 14) })
	}
	// The dequantize stays in the GEMVs: against the same folder without act-order, the decode
	// step has at most a gather kernel more per permuted layer, and reads and writes at most the
	// gathered activations' bytes more (a per-run dequantize kernel would write and read the
	// layer's f32 weight: 16 KiB and 24 KiB here).
	var stats [2]*passes.Stats
	for i, m := range []*Model{plain, fused} {
		e, err := m.Open(EngineOptions{Device: "sim", NoSimChecks: true})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		if stats[i], err = e.DecodeStats(); err != nil {
			t.Fatal(err)
		}
	}
	extra := int64(0)
	for _, k := range []int{64, 96} {
		extra += 4 * 4 * int64(k) // x read, gathered x written and read, perm read
	}
	if k, b := stats[1].Kernels-stats[0].Kernels, stats[1].DRAMBytes-stats[0].DRAMBytes; k > len(permuted) || b > extra {
		t.Fatalf("act-order adds %d kernels and %d bytes to the decode step, want at most %d and %d", k, b, len(permuted), extra)
	}
	t.Logf("decode step: %d kernels, %d bytes; without act-order %d, %d", stats[1].Kernels, stats[1].DRAMBytes, stats[0].Kernels, stats[0].DRAMBytes)
}

// An act-order layer's permutation given to New is checked before any program gathers by it.
func TestCheckPerms(t *testing.T) {
	perm := func(v ...float64) map[string]*tensor.Tensor {
		return map[string]*tensor.Tensor{"w.weight_perm": tensor.FromFloats(ir.T(ir.I32, len(v)), v)}
	}
	for _, c := range []struct {
		w    map[string]*tensor.Tensor
		want string
	}{
		{perm(2, 0, 1), ""},
		{perm(), ""},
		{perm(0, 0, 1), "lm: weight w.weight_perm is no permutation: element 1 is 0"},
		{perm(0, 3, 1), "element 1 is 3"},
		{perm(-1, 0), "element 0 is -1"},
	} {
		err := checkPerms(c.w)
		if got := fmt.Sprint(err); c.want == "" && err != nil || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%v: error %v, want %q", c.w["w.weight_perm"].I, err, c.want)
		}
	}
}
