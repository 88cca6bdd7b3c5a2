package parallel

import (
	"slices"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// iota returns a tensor of type t whose elements are 0, 1, 2, ... in row-major order.
func iota(t ir.Type) *tensor.Tensor {
	x := tensor.New(t)
	for i := range x.Len() {
		if t.DType.IsFloat() {
			x.F[i] = float64(i)
		} else {
			x.I[i] = int64(i)
		}
	}
	return x
}

// Shard k of a split along dim d holds the elements whose index along d is in
// [k·size/n, (k+1)·size/n), and gathering the shards gives the tensor back.
func TestSplitGather(t *testing.T) {
	for _, tc := range []struct {
		typ  ir.Type
		dim  int
		n    int
		want [][]float64 // each shard's elements
	}{
		{ir.T(ir.F32, 4, 2), 0, 2, [][]float64{{0, 1, 2, 3}, {4, 5, 6, 7}}},
		{ir.T(ir.I64, 2, 4), 1, 2, [][]float64{{0, 1, 4, 5}, {2, 3, 6, 7}}},
		{ir.T(ir.F32, 2, 3, 2), 1, 3, [][]float64{{0, 1, 6, 7}, {2, 3, 8, 9}, {4, 5, 10, 11}}},
		{ir.T(ir.BF16, 3), 0, 3, [][]float64{{0}, {1}, {2}}},
		{ir.T(ir.F32, 2, 2), 0, 1, [][]float64{{0, 1, 2, 3}}},
	} {
		x := iota(tc.typ)
		p := &Plan{N: tc.n, Inputs: map[string]int{"x": tc.dim}, Outputs: map[string]int{"x": tc.dim}}
		shards, err := p.Split(map[string]*tensor.Tensor{"x": x})
		if err != nil {
			t.Fatal(err)
		}
		outs := make([]map[string]*tensor.Tensor, tc.n)
		for k, s := range shards {
			var got []float64
			for i := range s["x"].Len() {
				got = append(got, s["x"].At(i))
			}
			if !slices.Equal(got, tc.want[k]) {
				t.Errorf("%s split %d ways along %d: shard %d = %v, want %v", tc.typ, tc.n, tc.dim, k, got, tc.want[k])
			}
			outs[k] = s
		}
		back, err := p.Gather(outs)
		if err != nil {
			t.Fatal(err)
		}
		if y := back["x"]; !y.Type.Equal(x.Type) || !slices.Equal(y.F, x.F) || !slices.Equal(y.I, x.I) {
			t.Errorf("%s: gathered %v, want %v", tc.typ, y, x)
		}
	}
}

func TestSplitReplicatedAndErrors(t *testing.T) {
	p := &Plan{N: 2, Inputs: map[string]int{"x": 0, "key": Replicated}, Outputs: map[string]int{}}
	key := iota(ir.T(ir.I64))
	shards, err := p.Split(map[string]*tensor.Tensor{"x": iota(ir.T(ir.F32, 4)), "key": key})
	if err != nil || shards[0]["key"] != key || shards[1]["key"] != key {
		t.Errorf("a replicated input is not given whole to every device: %v", err)
	}
	for _, tc := range []struct {
		in   map[string]*tensor.Tensor
		want string
	}{
		{map[string]*tensor.Tensor{"x": iota(ir.T(ir.F32, 3))}, "input x is f32[3]: dim 0 does not split into 2 equal shards"},
		{map[string]*tensor.Tensor{"y": iota(ir.T(ir.F32, 2))}, "the model has no input y"},
	} {
		if _, err := p.Split(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("err = %v, want %q", err, tc.want)
		}
	}
}

// graph returns a graph with the given inputs and an output per entry of outs, each the input of
// that name (or a constant of type outs[name] if there is none).
func graph(ins, outs map[string]ir.Type) *ir.Graph {
	g := ir.NewGraph("g")
	vals := map[string]*ir.Value{}
	for _, name := range sortedKeys(ins) {
		vals[name] = g.Input(name, ins[name], nil)
	}
	for _, name := range sortedKeys(outs) {
		v := vals[name]
		if v == nil {
			v = g.Add("constant", outs[name], nil)
		}
		g.SetOutput(name, v)
	}
	return g
}

func sortedKeys(m map[string]ir.Type) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func TestNewPlan(t *testing.T) {
	for _, tc := range []struct {
		name           string
		global, shard  *ir.Graph
		n              int
		inputs, output map[string]int
		err            string
	}{
		{
			name:   "batch first, a replicated key, an RNN state with the batch second",
			global: graph(map[string]ir.Type{"x": ir.T(ir.F32, 8, 3), "h0": ir.T(ir.F32, 2, 8, 5), "key": ir.T(ir.I64)}, map[string]ir.Type{"x": {}, "h0": {}}),
			shard:  graph(map[string]ir.Type{"x": ir.T(ir.F32, 4, 3), "h0": ir.T(ir.F32, 2, 4, 5), "key": ir.T(ir.I64)}, map[string]ir.Type{"x": {}, "h0": {}}),
			n:      2,
			inputs: map[string]int{"x": 0, "h0": 1, "key": Replicated}, output: map[string]int{"x": 0, "h0": 1},
		},
		{
			name:   "one device",
			global: graph(map[string]ir.Type{"x": ir.T(ir.F32, 8, 3)}, map[string]ir.Type{"loss": ir.T(ir.F32)}),
			shard:  graph(map[string]ir.Type{"x": ir.T(ir.F32, 8, 3)}, map[string]ir.Type{"loss": ir.T(ir.F32)}),
			n:      1,
			inputs: map[string]int{"x": Replicated}, output: map[string]int{"loss": 0},
		},
		{
			name:   "an output without the batch",
			global: graph(map[string]ir.Type{"x": ir.T(ir.F32, 8, 3)}, map[string]ir.Type{"loss": ir.T(ir.F32)}),
			shard:  graph(map[string]ir.Type{"x": ir.T(ir.F32, 4, 3)}, map[string]ir.Type{"loss": ir.T(ir.F32)}),
			n:      2,
			err:    "output loss: f32[] does not carry the batch",
		},
		{
			name:   "two dims change",
			global: graph(map[string]ir.Type{"x": ir.T(ir.F32, 8, 8)}, nil),
			shard:  graph(map[string]ir.Type{"x": ir.T(ir.F32, 4, 4)}, nil),
			n:      2,
			err:    "input x: f32[8,8] at the global batch, f32[4,4] per device: not one dim split 2 ways",
		},
		{
			name:   "not n times",
			global: graph(map[string]ir.Type{"x": ir.T(ir.F32, 8)}, nil),
			shard:  graph(map[string]ir.Type{"x": ir.T(ir.F32, 4)}, nil),
			n:      4,
			err:    "not one dim split 4 ways",
		},
	} {
		p, err := NewPlan(tc.global, tc.shard, tc.n)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err = %v, want %q", tc.name, err, tc.err)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		default:
			if !mapsEqual(p.Inputs, tc.inputs) || !mapsEqual(p.Outputs, tc.output) {
				t.Errorf("%s: plan %v %v, want %v %v", tc.name, p.Inputs, p.Outputs, tc.inputs, tc.output)
			}
		}
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestParseDevices(t *testing.T) {
	for _, tc := range []struct {
		list string
		want []Spec
		err  string
	}{
		{"sim:0,sim:1", []Spec{{"sim:0", "sim"}, {"sim:1", "sim"}}, ""},
		{"cuda:0,cuda:2,cuda:1", []Spec{{"cuda:0", "cuda:0"}, {"cuda:2", "cuda:2"}, {"cuda:1", "cuda:1"}}, ""},
		{"sim:0,cuda:1", nil, "mixes sim and cuda"},
		{"sim:0,sim:0", nil, "names sim:0 twice"},
		{"sim:0,sim", nil, `"sim" is not sim:N or cuda:N`},
		{"cuda:01,cuda:1", nil, `"cuda:01" is not sim:N or cuda:N`},
		{"ref:0,ref:1", nil, `"ref:0" is not sim:N or cuda:N`},
	} {
		got, err := ParseDevices(tc.list)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err = %v, want %q", tc.list, err, tc.err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v %v, want %v", tc.list, got, err, tc.want)
		}
	}
}

// FuzzParseDevices: any --device list is parsed or refused with an error, never a panic, and a
// parsed list names each device once, as sim:N or cuda:N of one kind.
func FuzzParseDevices(f *testing.F) {
	for _, s := range []string{"sim:0,sim:1", "cuda:0,cuda:1", "sim:0,cuda:0", "", ",", "sim:-1", "cuda:99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, list string) {
		specs, err := ParseDevices(list)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, s := range specs {
			kind, _, _ := strings.Cut(s.Name, ":")
			if seen[s.Name] || kind != strings.SplitN(specs[0].Name, ":", 2)[0] || (s.Open != "sim" && s.Open != s.Name) {
				t.Fatalf("%q parsed as %v", list, specs)
			}
			seen[s.Name] = true
		}
	})
}
