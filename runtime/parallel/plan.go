package parallel

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// Replicated marks an input that does not carry the batch: every device gets all of it.
const Replicated = -1

// Plan says how the tensors of a run at the global batch map to the N devices' shards.
type Plan struct {
	N int
	// Inputs and Outputs map each name to the dim that carries the batch (Replicated for an
	// input that does not). Every output carries the batch.
	Inputs, Outputs map[string]int
}

// NewPlan compares the model's graph traced at the global batch with the graph traced at the
// per-device batch (global/n): a dim that carries the batch is n times larger in the first.
func NewPlan(global, shard *ir.Graph, n int) (*Plan, error) {
	if n < 1 {
		return nil, fmt.Errorf("parallel: %d devices", n)
	}
	p := &Plan{N: n, Inputs: map[string]int{}, Outputs: map[string]int{}}
	shardIn := map[string]*ir.Value{}
	for _, v := range shard.Inputs() {
		shardIn[v.Name] = v
	}
	for _, v := range global.Inputs() {
		s, ok := shardIn[v.Name]
		if !ok {
			return nil, fmt.Errorf("parallel: input %s is missing from the per-device graph", v.Name)
		}
		d, err := batchDim(v.Type, s.Type, n)
		if err != nil {
			return nil, fmt.Errorf("parallel: input %s: %v", v.Name, err)
		}
		p.Inputs[v.Name] = d
	}
	if len(shardIn) != len(p.Inputs) {
		return nil, fmt.Errorf("parallel: the per-device graph has %d inputs, the global one %d", len(shardIn), len(p.Inputs))
	}
	if len(global.Outputs) != len(shard.Outputs) {
		return nil, fmt.Errorf("parallel: the per-device graph has %d outputs, the global one %d", len(shard.Outputs), len(global.Outputs))
	}
	for i, o := range global.Outputs {
		s := shard.Outputs[i]
		if s.Name != o.Name {
			return nil, fmt.Errorf("parallel: output %d is %s in the per-device graph, %s in the global one", i, s.Name, o.Name)
		}
		d, err := batchDim(o.Value.Type, s.Value.Type, n)
		if err == nil && d == Replicated && n > 1 {
			err = fmt.Errorf("%s does not carry the batch, so the devices' values cannot be gathered (DataParallel's outputs are per sample)", o.Value.Type)
		}
		if err != nil {
			return nil, fmt.Errorf("parallel: output %s: %v", o.Name, err)
		}
		p.Outputs[o.Name] = max(d, 0)
	}
	return p, nil
}

// batchDim returns the dim of global that is n times shard's, or Replicated if the types are equal.
func batchDim(global, shard ir.Type, n int) (int, error) {
	if global.DType != shard.DType || len(global.Shape) != len(shard.Shape) {
		return 0, fmt.Errorf("%s at the global batch, %s per device", global, shard)
	}
	if n == 1 || global.Equal(shard) {
		return Replicated, nil
	}
	dim := Replicated
	for d := range global.Shape {
		switch g, s := global.Shape[d], shard.Shape[d]; {
		case g == s:
		case g == n*s && dim == Replicated:
			dim = d
		default:
			return 0, fmt.Errorf("%s at the global batch, %s per device: not one dim split %d ways", global, shard, n)
		}
	}
	return dim, nil
}

// Split cuts the inputs of a run at the global batch into the N devices' inputs.
func (p *Plan) Split(inputs map[string]*tensor.Tensor) ([]map[string]*tensor.Tensor, error) {
	shards := make([]map[string]*tensor.Tensor, p.N)
	for i := range shards {
		shards[i] = map[string]*tensor.Tensor{}
	}
	for name, x := range inputs {
		d, ok := p.Inputs[name]
		if !ok {
			return nil, fmt.Errorf("parallel: the model has no input %s", name)
		}
		if d == Replicated {
			for i := range shards {
				shards[i][name] = x
			}
			continue
		}
		if d >= len(x.Type.Shape) || x.Type.Shape[d]%p.N != 0 {
			return nil, fmt.Errorf("parallel: input %s is %s: dim %d does not split into %d equal shards", name, x.Type, d, p.N)
		}
		for i, s := range chunks(x, d, p.N) {
			shards[i][name] = s
		}
	}
	return shards, nil
}

// Gather concatenates the devices' outputs, in device order, along each output's batch dim.
func (p *Plan) Gather(outs []map[string]*tensor.Tensor) (map[string]*tensor.Tensor, error) {
	if len(outs) != p.N {
		return nil, fmt.Errorf("parallel: %d devices' outputs, want %d", len(outs), p.N)
	}
	res := map[string]*tensor.Tensor{}
	for name, d := range p.Outputs {
		parts := make([]*tensor.Tensor, p.N)
		for i, o := range outs {
			if parts[i] = o[name]; parts[i] == nil {
				return nil, fmt.Errorf("parallel: device %d returned no output %s", i, name)
			}
			if !parts[i].Type.Equal(parts[0].Type) {
				return nil, fmt.Errorf("parallel: output %s is %s on device 0 but %s on device %d", name, parts[0].Type, parts[i].Type, i)
			}
		}
		res[name] = concat(parts, d)
	}
	return res, nil
}

// chunks cuts x into n equal parts along dim d.
func chunks(x *tensor.Tensor, d, n int) []*tensor.Tensor {
	outer, size, inner := split3(x.Type.Shape, d)
	part := size / n
	shape := slices.Clone(x.Type.Shape)
	shape[d] = part
	res := make([]*tensor.Tensor, n)
	for k := range res {
		y := tensor.Empty(ir.Type{DType: x.Type.DType, Shape: shape})
		block := part * inner
		moveBlocks(y.F, x.F, outer, block, block, 0, size*inner, k*block)
		moveBlocks(y.I, x.I, outer, block, block, 0, size*inner, k*block)
		res[k] = y
	}
	return res
}

// concat joins equal-typed parts along dim d.
func concat(parts []*tensor.Tensor, d int) *tensor.Tensor {
	n := len(parts)
	outer, part, inner := split3(parts[0].Type.Shape, d)
	shape := slices.Clone(parts[0].Type.Shape)
	shape[d] = part * n
	y := tensor.Empty(ir.Type{DType: parts[0].Type.DType, Shape: shape})
	block := part * inner
	for k, x := range parts {
		moveBlocks(y.F, x.F, outer, block, n*block, k*block, block, 0)
		moveBlocks(y.I, x.I, outer, block, n*block, k*block, block, 0)
	}
	return y
}

// moveBlocks copies outer blocks of n elements: block o from src[o*srcStride+srcAt:] to
// dst[o*dstStride+dstAt:]. A tensor holds its values in F or in I; the other is empty.
func moveBlocks[E any](dst, src []E, outer, n, dstStride, dstAt, srcStride, srcAt int) {
	if len(dst) == 0 || len(src) == 0 {
		return
	}
	for o := range outer {
		copy(dst[o*dstStride+dstAt:][:n], src[o*srcStride+srcAt:][:n])
	}
}

// split3 returns the number of elements before dim d, its size, and the elements after it.
func split3(shape ir.Shape, d int) (outer, size, inner int) {
	return ir.Shape(shape[:d]).NumElements(), shape[d], ir.Shape(shape[d+1:]).NumElements()
}

// A Spec is one device of a --device list.
type Spec struct {
	Name string // as given: "sim:1", "cuda:0"
	Open string // the name package device opens: "sim" (each a simulator of its own), "cuda:0"
}

// ParseDevices parses a list of devices, "sim:0,sim:1" or "cuda:0,cuda:1": simulated or CUDA
// devices, not both, each named once.
func ParseDevices(list string) ([]Spec, error) {
	var specs []Spec
	kind := ""
	seen := map[string]bool{}
	for _, name := range strings.Split(list, ",") {
		k, num, ok := strings.Cut(name, ":")
		i, err := strconv.Atoi(num)
		if !ok || (k != "sim" && k != "cuda") || err != nil || i < 0 || strconv.Itoa(i) != num {
			return nil, fmt.Errorf("device list %q: %q is not sim:N or cuda:N", list, name)
		}
		if kind != "" && k != kind {
			return nil, fmt.Errorf("device list %q mixes sim and cuda devices", list)
		}
		if seen[name] {
			return nil, fmt.Errorf("device list %q names %s twice", list, name)
		}
		kind, seen[name] = k, true
		open := name
		if k == "sim" {
			open = "sim"
		}
		specs = append(specs, Spec{Name: name, Open: open})
	}
	return specs, nil
}
