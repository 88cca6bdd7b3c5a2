package quant

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/tensorio"
)

// refCase is one layer of testdata/layouts.safetensors (scripts/quant_reference.py).
type refCase struct {
	Name      string `json:"name"`
	Method    string `json:"quant_method"`
	Bits      int    `json:"bits"`
	GroupSize int    `json:"group_size"`
	DescAct   bool   `json:"desc_act"`
	Out       int    `json:"out"`
	In        int    `json:"in"`
}

func readReference(t *testing.T) (map[string]*tensorio.Array, []refCase) {
	t.Helper()
	ts, meta, err := tensorio.ReadSafetensorsFile("testdata/layouts.safetensors")
	if err != nil {
		t.Fatal(err)
	}
	var cases []refCase
	if err := json.Unmarshal([]byte(meta["cases"]), &cases); err != nil || len(cases) == 0 {
		t.Fatalf("reference cases: %v (%d)", err, len(cases))
	}
	return ts, cases
}

func (c refCase) format() Format {
	return Format{Method: c.Method, Bits: c.Bits, GroupSize: c.GroupSize, DescAct: c.DescAct}
}

func (c refCase) packed(ts map[string]*tensorio.Array) Packed {
	p := Packed{File: "layouts.safetensors", Name: c.Name, Tensors: map[string]*tensorio.Array{}}
	for _, s := range []string{"qweight", "qzeros", "scales", "g_idx"} {
		if a := ts[c.Name+"."+s]; a != nil {
			p.Tensors[s] = a
		}
	}
	return p
}

// Every layout PyTorch packed (GPTQ 4 and 8 bit, groups of 32 and 128 and per channel, with and
// without act-order; AWQ's GEMM layout) unpacks and dequantizes bit for bit to what PyTorch
// computed from it, and packs back to the same bytes.
func TestDequantizeMatchesTorch(t *testing.T) {
	ts, cases := readReference(t)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			f := c.format()
			p := c.packed(ts)
			l, err := Unpack(f, p, c.Out, c.In)
			if err != nil {
				t.Fatal(err)
			}
			want := ts[c.Name+".dequantized"]
			if want == nil || !slices.Equal(want.Shape, []int{c.Out, c.In}) {
				t.Fatalf("reference dequantized weight: %v", want)
			}
			got := l.Dequantize()
			for i, v := range got {
				w := math.Float32frombits(binary.LittleEndian.Uint32(want.Data[4*i:]))
				if math.Float32bits(v) != math.Float32bits(w) {
					t.Fatalf("weight [%d, %d] = %v, torch %v", i/c.In, i%c.In, v, w)
				}
			}
			if c.DescAct && slices.Equal(l.Group, DefaultGroups(c.In, c.GroupSize)) {
				t.Errorf("act-order case has the default groups")
			}
			back, err := Pack(f, l)
			if err != nil {
				t.Fatal(err)
			}
			for s, a := range p.Tensors {
				if b := back[s]; b == nil || b.DType != a.DType || !slices.Equal(b.Shape, a.Shape) || !bytes.Equal(b.Data, a.Data) {
					t.Errorf("%s packs back differently", s)
				}
			}
		})
	}
}

// Bad packed layers are one clear error each, naming the file, the tensor and the field.
func TestUnpackErrors(t *testing.T) {
	ts, cases := readReference(t)
	var gptq, awq refCase
	for _, c := range cases {
		switch c.Name {
		case "gptq4_g32":
			gptq = c
		case "awq4_g32":
			awq = c
		}
	}
	i32 := func(shape []int, v uint32) *tensorio.Array {
		a := &tensorio.Array{DType: "i32", Shape: shape, Data: make([]byte, 4*numel(shape))}
		for i := range numel(shape) {
			binary.LittleEndian.PutUint32(a.Data[4*i:], v)
		}
		return a
	}
	for _, tc := range []struct {
		name   string
		c      refCase
		f      func(*Format)
		n, k   int
		change func(map[string]*tensorio.Array)
		want   string
	}{
		{"qweight rows", gptq, nil, 0, 0, func(m map[string]*tensorio.Array) { m["qweight"] = i32([]int{7, 16}, 0) },
			`tensor "gptq4_g32.qweight": shape [7 16], want [8 16] (gptq 4-bit, group size 32, 16 outputs, 64 inputs)`},
		{"config disagrees", gptq, nil, 16, 96, nil, `tensor "gptq4_g32.qweight": shape [8 16], want [12 16]`},
		{"zeros shape", gptq, nil, 0, 0, func(m map[string]*tensorio.Array) { m["qzeros"] = i32([]int{2, 4}, 0) },
			`tensor "gptq4_g32.qzeros": shape [2 4], want [2 2]`},
		{"awq zeros shape", awq, nil, 0, 0, func(m map[string]*tensorio.Array) { m["qzeros"] = i32([]int{1, 2}, 0) },
			`tensor "awq4_g32.qzeros": shape [1 2], want [2 2]`},
		{"g_idx out of range", gptq, nil, 0, 0, func(m map[string]*tensorio.Array) { m["g_idx"] = i32([]int{64}, 2) },
			`tensor "gptq4_g32.g_idx": element 0 is group 2, outside [0, 2)`},
		{"g_idx negative", gptq, nil, 0, 0, func(m map[string]*tensorio.Array) { m["g_idx"] = i32([]int{64}, 0xFFFFFFFF) },
			`element 0 is group -1, outside [0, 2)`},
		{"g_idx missing with act-order", gptq, func(f *Format) { f.DescAct = true }, 0, 0, func(m map[string]*tensorio.Array) { delete(m, "g_idx") },
			`tensor "gptq4_g32.g_idx" is missing`},
		{"scales dtype", gptq, nil, 0, 0, func(m map[string]*tensorio.Array) { m["scales"] = i32([]int{2, 16}, 0) },
			`tensor "gptq4_g32.scales": dtype i32, want F16`},
		{"qweight dtype", gptq, nil, 0, 0, func(m map[string]*tensorio.Array) { m["qweight"].DType = "f32" },
			`tensor "gptq4_g32.qweight": dtype f32, want I32`},
		{"short data", gptq, nil, 0, 0, func(m map[string]*tensorio.Array) { m["qweight"].Data = m["qweight"].Data[:8] },
			`tensor "gptq4_g32.qweight": 8 bytes for shape [8 16]`},
		{"bits 3", gptq, func(f *Format) { f.Bits = 3 }, 0, 0, nil, "gptq bits 3 is not supported (4, 8)"},
		{"awq bits 8", awq, func(f *Format) { f.Bits = 8 }, 0, 0, nil, "awq bits 8 is not supported (4)"},
		{"unknown method", gptq, func(f *Format) { f.Method = "bitsandbytes" }, 0, 0, nil, `quant_method "bitsandbytes" is not supported (gptq, awq)`},
		{"group size 0", gptq, func(f *Format) { f.GroupSize = 0 }, 0, 0, nil, "group_size 0: want -1 or a positive size"},
		{"outputs do not pack", gptq, nil, 12, 64, nil, "12 output channels do not pack into int32s of 8 4-bit values"},
		{"inputs do not pack", gptq, nil, 16, 60, nil, "60 input channels do not pack"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.c.format()
			if tc.f != nil {
				tc.f(&f)
			}
			p := tc.c.packed(ts)
			for s, a := range p.Tensors { // the change must not reach the shared reference
				b := *a
				b.Data = slices.Clone(a.Data)
				p.Tensors[s] = &b
			}
			if tc.change != nil {
				tc.change(p.Tensors)
			}
			n, k := tc.c.Out, tc.c.In
			if tc.n != 0 {
				n, k = tc.n, tc.k
			}
			_, err := Unpack(f, p, n, k)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "quant: layouts.safetensors: ") || strings.Contains(err.Error(), "\n") {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}
