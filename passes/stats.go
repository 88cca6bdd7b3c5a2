package passes

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// Stats is the cost report of a compiled graph. The JSON field names are a public format.
type Stats struct {
	// Kernels counts the kernels of one run; BindKernels those that run when weights are bound
	// (bindtime.go), which the totals below leave out.
	Kernels        int   `json:"kernels"`
	BindKernels    int   `json:"bind_kernels,omitempty"`
	EagerKernels   int   `json:"eager_kernels"`
	DRAMBytes      int64 `json:"dram_bytes"`
	EagerDRAMBytes int64 `json:"eager_dram_bytes"`
	IdealDRAMBytes int64 `json:"ideal_dram_bytes"` // the definition (idealBytes)
	// IdealDRAMRereadBytes adds the operands of pooling and gathers and the re-reads that a
	// chain of contractions forces (idealBytes).
	IdealDRAMRereadBytes int64 `json:"ideal_dram_reread_bytes"`
	Flops                int64 `json:"flops"`
	// Params counts the model's parameters (a dequantize's result elements stand for the
	// integers, scales and zero points it reads) and ParamBytes the bytes its parameter buffers
	// take on the device: ParamBytes/Params is the bytes per parameter of its weight format.
	Params          int64 `json:"params"`
	ParamBytes      int64 `json:"param_bytes"`
	ArenaBytes      int64 `json:"arena_bytes"`
	NaiveBytes      int64 `json:"naive_bytes"`
	LowerBoundBytes int64 `json:"lower_bound_bytes"` // most temp bytes live at once, exact sizes
	// AlignedLowerBoundBytes: no plan with 256-byte-aligned offsets needs less.
	AlignedLowerBoundBytes int64 `json:"lower_bound_aligned_bytes"`
	// ModeledTimeUS is the modeled time of one run with every kernel launched on a stream;
	// ModeledGraphTimeUS the same kernels replayed as a CUDA graph; ModeledKernelTimeUS the
	// kernels alone, without launch overhead. EagerModeledTimeUS is one kernel per op, launched
	// on a stream.
	ModeledTimeUS       float64 `json:"modeled_time_us"`
	ModeledGraphTimeUS  float64 `json:"modeled_graph_time_us"`
	ModeledKernelTimeUS float64 `json:"modeled_kernel_time_us"`
	EagerModeledTimeUS  float64 `json:"eager_modeled_time_us"`
	// PDLKernels (sm_90) counts the kernels launched as programmatic dependent launches with a
	// kernel before them to overlap; ModeledGraphPDLBoundUS is ModeledGraphTimeUS if each of them
	// hid its whole graph launch overhead. That is an assumption, not the model: no published
	// figure says how much PDL hides (cost.go), so ModeledGraphTimeUS charges them in full.
	PDLKernels             int           `json:"pdl_kernels,omitempty"`
	ModeledGraphPDLBoundUS float64       `json:"modeled_graph_pdl_bound_us,omitempty"`
	Model                  string        `json:"model"`
	PerKernel              []KernelStats `json:"per_kernel"`
}

// KernelStats is one kernel's share of the report. ModeledTimeUS is its time on the GPU,
// without the launch overhead; Blocks the blocks the model assumes it launches.
type KernelStats struct {
	Name          string  `json:"name"`
	Kind          string  `json:"kind"`
	ReadBytes     int64   `json:"read_bytes"`
	WriteBytes    int64   `json:"write_bytes"`
	Flops         int64   `json:"flops"`
	Blocks        int     `json:"blocks"`
	ModeledTimeUS float64 `json:"modeled_time_us"`
	BindTime      bool    `json:"bind_time,omitempty"` // runs when weights are bound, not per run
}

// JSON returns the report as one JSON object (the --stats=json format).
func (s *Stats) JSON() []byte { return indentedJSON(s) }

// WriteTable prints the report per kernel and in total.
func (s *Stats) WriteTable(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "kernel\tkind\tread B\twrite B\tflops\tblocks\tmodel µs\t")
	for _, k := range s.PerKernel {
		kind := k.Kind
		if k.BindTime {
			kind += " (bind)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%.3f\t\n", k.Name, kind, k.ReadBytes, k.WriteBytes, k.Flops, k.Blocks, k.ModeledTimeUS)
	}
	fmt.Fprintf(tw, "total\t\t\t%d\t%d\t\t%.3f\t\n", s.DRAMBytes, s.Flops, s.ModeledKernelTimeUS)
	tw.Flush()
	fmt.Fprintf(w, "kernels %d per run (eager %d)", s.Kernels, s.EagerKernels)
	if s.BindKernels > 0 {
		fmt.Fprintf(w, ", %d more when weights are bound (not in the totals)", s.BindKernels)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "DRAM bytes %d (eager %d, ideal %d, %d with re-reads)\n", s.DRAMBytes, s.EagerDRAMBytes, s.IdealDRAMBytes, s.IdealDRAMRereadBytes)
	if s.Params > 0 {
		fmt.Fprintf(w, "parameters %d in %d bytes (%.3f bytes/parameter)\n", s.Params, s.ParamBytes, float64(s.ParamBytes)/float64(s.Params))
	}
	fmt.Fprintf(w, "arena bytes %d (lower bound %d, %d aligned; naive %d)\n", s.ArenaBytes, s.LowerBoundBytes, s.AlignedLowerBoundBytes, s.NaiveBytes)
	fmt.Fprintf(w, "modeled time %.3f µs launched on a stream, %.3f µs as a CUDA graph, %.3f µs in kernels (eager %.3f µs): %s\n",
		s.ModeledTimeUS, s.ModeledGraphTimeUS, s.ModeledKernelTimeUS, s.EagerModeledTimeUS, s.Model)
	if s.PDLKernels > 0 {
		fmt.Fprintf(w, "assumption, not the model: if each of the %d programmatic dependent launches hid its whole %.3f µs graph launch, %.3f µs as a CUDA graph (no published figure says how much PDL hides; the model charges it in full)\n",
			s.PDLKernels, graphLaunchUS, s.ModeledGraphPDLBoundUS)
	}
}

func costPass(st *State) error {
	eager, err := eagerKernels(st.Graph)
	if err != nil {
		return err
	}
	s := &Stats{Model: CostModel}
	s.IdealDRAMBytes, s.IdealDRAMRereadBytes = idealBytes(st.Graph)
	s.Kernels, s.DRAMBytes, s.ModeledKernelTimeUS, s.PerKernel = kernelCosts(st.Kernels, st.opt.TF32)
	for _, k := range s.PerKernel {
		if k.BindTime {
			s.BindKernels++
		}
	}
	s.ModeledTimeUS = s.ModeledKernelTimeUS + launchesUS(s.Kernels, false)
	s.ModeledGraphTimeUS = s.ModeledKernelTimeUS + launchesUS(s.Kernels, true)
	if s.PDLKernels = pdlKernels(st.Kernels, st.opt.SM); s.PDLKernels > 0 {
		s.ModeledGraphPDLBoundUS = s.ModeledKernelTimeUS + launchesUS(s.Kernels-s.PDLKernels, true)
	}
	var eagerUS float64
	s.EagerKernels, s.EagerDRAMBytes, eagerUS, _ = kernelCosts(eager, st.opt.TF32)
	s.EagerModeledTimeUS = eagerUS + launchesUS(s.EagerKernels, false)
	for _, v := range st.Graph.Values {
		s.Flops += flops(v)
	}
	s.ParamBytes, s.Params = ParamStats(st.Graph)
	if p := st.Plan; p != nil {
		s.ArenaBytes, s.NaiveBytes, s.AlignedLowerBoundBytes, s.LowerBoundBytes = p.ArenaBytes, p.NaiveBytes, p.AlignedLowerBoundBytes, p.LowerBoundBytes
	}
	st.Stats = s
	return nil
}

// kernelCosts models every kernel of kg: the count, DRAM bytes and time on the GPU without
// launch overhead of the per-run kernels, and each kernel's report (bind-time ones included).
func kernelCosts(kg *KernelGraph, tf32 bool) (n int, bytes int64, us float64, per []KernelStats) {
	per = make([]KernelStats, len(kg.Kernels))
	for i, k := range kg.Kernels {
		per[i] = kernelCost(k, tf32)
		if per[i].BindTime = k.BindTime; k.BindTime {
			continue
		}
		n++
		bytes += per[i].ReadBytes + per[i].WriteBytes
		us += per[i].ModeledTimeUS
	}
	return n, bytes, us, per
}

// footprint is how many elements of a kernel input the kernel touches: all of them, unless it
// reads the input only through slices (or gathers rows of it).
func footprint(v *ir.Value, users map[*ir.Value][]*ir.Value) int64 {
	n := int64(v.Type.Shape.NumElements())
	if len(users[v]) == 0 {
		return n // copied to an output
	}
	var sum int64
	for _, u := range users[v] {
		switch {
		case u.Op == "slice":
			sum += footprint(u, users)
		case u.Op == "reshape" || u.Op == "transpose" || u.Op == "broadcast_in_dim":
			sum += min(n, footprint(u, users))
		case u.Op == "gather" && u.Args[0] == v:
			sum += int64(u.Type.Shape.NumElements())
		default:
			sum += n
		}
	}
	return min(n, sum)
}

// flops counts a value's arithmetic: one per element for elementwise ops, one per operand
// element for reductions, two per multiply-add for contractions, one per window element for
// pooling, none for data movement; attention counts the (query, key) pairs it computes.
func flops(v *ir.Value) int64 {
	out := int64(v.Type.Shape.NumElements())
	switch ops.ClassOf(v.Op) {
	case ops.Elementwise:
		return out
	case ops.Reduce:
		return int64(v.Args[0].Type.Shape.NumElements())
	case ops.Contraction:
		if v.Op == "conv2d" {
			w := v.Args[1].Type.Shape
			return 2 * out * int64(w[1]*w[2]*w[3])
		}
		k := int64(1)
		for _, a := range v.Attrs.Ints("lhs_contract") {
			k *= int64(v.Args[0].Type.Shape[a])
		}
		return 2 * out * k
	}
	if attentionKernelOp(v.Op) {
		return attentionFlops(v)
	}
	if v.Op == "max_pool2d" || v.Op == "avg_pool2d" {
		k := v.Attrs.Ints("kernel")
		return out * int64(k[0]*k[1])
	}
	return 0
}

// idealBytes returns the ideal_dram_bytes and the refined ideal. The ideal is every input
// and parameter read once, every output written once, and the intermediates that must
// materialize at contraction and reduction boundaries written once and read once:
//
//   - operands of contractions (looking through views): a tiled contraction reads each operand
//     element more than once;
//   - results of contractions that reach a reduction through elementwise ops and views (a row
//     spans many contraction tiles);
//   - results of reductions that reach a reduction over other rows.
//
// An intermediate that is also an output counts once more, for the read.
//
// The refined ideal (ideal_dram_reread_bytes) also counts the operands of pooling and gathers,
// which read from memory too (except a pooling that a convolution's epilogue computes,
// pooledConv), and the re-reads below. Reading once is the ideal only where one
// kernel can do all the reading. The ideal already
// assumes that a contraction reads its operands from memory, so no kernel holds a value computed
// before a contraction and a value computed from its result. An input, parameter or
// materialized intermediate read in full by values that a chain of such contractions separates
// (a recurrent weight read by the matmul of every time step) is therefore read by as many
// kernels as the chain has groups (readGroups); each read after the first is counted.
func idealBytes(g *ir.Graph) (ideal, reread int64) {
	var total int64
	for _, v := range g.Values {
		if v.Op == ir.OpInput || v.Op == ir.OpParam {
			total += int64(v.Type.Bytes())
		}
	}
	isOutput := map[*ir.Value]bool{}
	for _, o := range g.Outputs {
		total += int64(o.Value.Type.Bytes())
		isOutput[o.Value] = true
	}
	leaf := func(v *ir.Value) bool {
		return v.Op == ir.OpInput || v.Op == ir.OpParam || v.Op == "constant" || v.Op == "iota"
	}
	boundary := map[*ir.Value]bool{}
	fromMemory := map[*ir.Value]bool{} // boundary values, and operands of pooling and gathers
	// sources walks back from v through elementwise ops and views to the contractions and
	// reductions it is computed from.
	var sources func(v *ir.Value, seen map[*ir.Value]bool, found func(*ir.Value))
	sources = func(v *ir.Value, seen map[*ir.Value]bool, found func(*ir.Value)) {
		if seen[v] || leaf(v) {
			return
		}
		seen[v] = true
		switch ops.ClassOf(v.Op) {
		case ops.Contraction, ops.Reduce, ops.Other:
			found(v)
			return
		}
		for _, a := range v.Args {
			sources(a, seen, found)
		}
	}
	for _, h := range g.Values {
		switch ops.ClassOf(h.Op) {
		case ops.Contraction, ops.Other:
			if leaf(h) || pooledConv(h) != nil {
				continue // a pooling a convolution's epilogue computes reads no memory
			}
			for _, a := range h.Args {
				for isView(a.Op) {
					a = a.Args[0]
				}
				if a.Op == "cast" && a.Args[0].Op == ops.DequantizeOp {
					a = a.Args[0] // autocast's bf16 weight, read as integers too
				}
				if a.Op == ops.DequantizeOp && bufferViews(a.Args) {
					continue // read as integers by the operand's loads (passes/quant.go)
				}
				if !leaf(a) {
					// attention, like a contraction, reads its operands from memory
					boundary[a] = boundary[a] || ops.ClassOf(h.Op) == ops.Contraction || attentionKernelOp(h.Op)
					fromMemory[a] = true
				}
			}
		case ops.Reduce:
			sources(h.Args[0], map[*ir.Value]bool{}, func(s *ir.Value) {
				switch ops.ClassOf(s.Op) {
				case ops.Contraction:
					boundary[s], fromMemory[s] = true, true
				case ops.Reduce:
					if !s.Args[0].Type.Shape.Equal(h.Args[0].Type.Shape) || !slices.Equal(s.Attrs.Ints("axes"), h.Attrs.Ints("axes")) {
						boundary[s], fromMemory[s] = true, true
					}
				}
			})
		}
	}
	ideal, reread = total, total
	for v := range fromMemory {
		n := 2 * int64(v.Type.Bytes())
		if isOutput[v] {
			n /= 2
		}
		if boundary[v] {
			ideal += n
		}
		reread += n
	}
	return ideal, reread + rereadBytes(g, func(v *ir.Value) bool {
		return v.Op == ir.OpInput || v.Op == ir.OpParam || fromMemory[v]
	})
}

// rereadBytes is, over the values src that isSource accepts, (readGroups - 1) times src's bytes.
func rereadBytes(g *ir.Graph, isSource func(*ir.Value) bool) int64 {
	// readers[src] are the values that read every element of src: elementwise ops, reductions
	// and dot_general (a convolution's weights too), with src as an operand or seen through
	// reshapes, transposes and broadcasts. A slice, a gather or a strided window may read only
	// part of it.
	readers := map[*ir.Value]map[*ir.Value]bool{}
	for _, u := range g.Values {
		for i, a := range u.Args {
			switch c := ops.ClassOf(u.Op); {
			case c == ops.Elementwise || c == ops.Reduce || u.Op == "dot_general":
			case u.Op == "conv2d" && i == 1:
			default:
				continue
			}
			for a.Op == "reshape" || a.Op == "transpose" || a.Op == "broadcast_in_dim" {
				a = a.Args[0]
			}
			if !isSource(a) {
				continue
			}
			if readers[a] == nil {
				readers[a] = map[*ir.Value]bool{}
			}
			readers[a][u] = true
		}
	}
	pos := make(map[*ir.Value]int, len(g.Values))
	for i, v := range g.Values {
		pos[v] = i
	}
	var total int64
	for _, src := range g.Values { // in graph order, so that the report is deterministic
		if rs := readers[src]; len(rs) > 1 {
			total += int64(readGroups(g, pos, rs)-1) * int64(src.Type.Bytes())
		}
	}
	return total
}

// readGroups is the most groups of readers along one dependency path, where consecutive groups
// are separated by a contraction: the reads before a contraction (in the producers of its
// operands) and the reads from the contraction on (the contraction itself and what is computed
// from its result) cannot share a kernel, because the operands are in memory before the
// contraction's kernel starts. Each value carries (groups closed by a contraction, whether the
// current group has a read), maximized lexicographically over its operands: (k+1, no read)
// dominates (k, read), which the next contraction would only turn into k+1.
func readGroups(g *ir.Graph, pos map[*ir.Value]int, readers map[*ir.Value]bool) int {
	closed := make([]int, len(g.Values))
	open := make([]bool, len(g.Values))
	most := 0
	for i, v := range g.Values {
		k, o := 0, false
		for _, a := range v.Args {
			if j := pos[a]; closed[j] > k || closed[j] == k && open[j] {
				k, o = closed[j], open[j]
			}
		}
		if ops.ClassOf(v.Op) == ops.Contraction && o {
			k, o = k+1, false
		}
		if readers[v] {
			o = true
		}
		closed[i], open[i] = k, o
		if o {
			most = max(most, k+1)
		} else {
			most = max(most, k)
		}
	}
	return most
}

// attentionFlops is two multiply-adds per element of q·kᵀ and of p·v and four operations
// (scale, max, exp, sum) per score, over the pairs the mask leaves: all L·S, the causal
// triangle, or all L·S for a position mask (pos is a runtime value; the cache bounds it). The
// backward's ops recompute the scores: attention_lse computes them alone, the dv kernel adds P·do,
// the dq and dk kernels dP = do·vᵀ and a product with dS.
func attentionFlops(v *ir.Value) int64 {
	q, k, val := v.Args[0].Type.Shape, v.Args[1].Type.Shape, v.Args[2].Type.Shape
	b, h, l, e, s, ev := int64(q[0]), int64(q[1]), int64(q[2]), int64(q[3]), int64(k[2]), int64(val[3])
	pairs := l * s
	if v.Attrs.String("mask", "") == ops.MaskCausal {
		full := min(l, s) // rows 0..full-1 see i+1 keys, the rest all s
		pairs = full*(full+1)/2 + (l-full)*s
	}
	switch {
	case v.Op == ops.AttentionLSEOp: // the scores alone
		return b * h * pairs * (2*e + 4)
	case v.Op == ops.AttentionGradOp && v.Attrs.String("wrt", "") == "v": // scores, P·do
		return b * h * pairs * (2*e + 2*ev + 4)
	case v.Op == ops.AttentionGradOp: // scores, dP = do·vᵀ, dS·k or dSᵀ·q
		return b * h * pairs * (4*e + 2*ev + 6)
	}
	return b * h * pairs * (2*e + 2*ev + 4)
}

// ParamStats is what g's parameters take on the device, in bytes, and the model's parameters
// they stand for: a quantized weight counts its N·K elements, not its integers, scales, zero
// points and act-order permutation.
func ParamStats(g *ir.Graph) (bytes, params int64) {
	parts := map[*ir.Value]bool{}
	for _, v := range g.Values {
		if v.Op == "gather" && v.Args[1].Op == ir.OpParam { // an act-order layer's input order
			parts[v.Args[1]] = true
		}
		if v.Op == ops.DequantizeOp {
			params += int64(v.Type.Shape.NumElements())
			for _, a := range v.Args {
				parts[a] = true
			}
		}
	}
	for _, p := range g.Params() {
		bytes += int64(p.Type.Bytes())
		if !parts[p] {
			params += int64(p.Type.Shape.NumElements())
		}
	}
	return bytes, params
}
