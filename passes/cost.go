package passes

import (
	"github.com/gcomp/gcomp/codegen/attnmma"
	"github.com/gcomp/gcomp/codegen/splitkv"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"slices"
)

// The cost model: an H100 SXM roofline per kernel, scaled by the share of the machine the kernel's
// blocks occupy, plus a fixed overhead per launch.
//
// Launch overheads. The CUDA programming guide ("CUDA Graphs") describes the host-side work the
// driver does for every kernel placed in a stream, and that a graph pays it once at instantiation.
// The figures are CUDA.jl's published measurement (its "Graphs" documentation): 10 RK4 steps, 80
// small broadcast kernels, take 260 µs launched one by one and 70 µs replayed as a graph, i.e.
// 3.25 µs and 0.875 µs per kernel. Those kernels do almost no work, so the per-kernel time is the
// launch overhead (an upper bound: it includes their few hundred nanoseconds on the GPU). The
// model adds the overhead to every kernel's time, as if the host never ran ahead of the GPU.
const (
	launchUS      = 3.25  // per kernel launched on a stream
	graphLaunchUS = 0.875 // per kernel node of a replayed CUDA graph
)

// The H100 SXM numbers of the roofline (NVIDIA's H100 datasheet, SXM5: 3.35 TB/s HBM3, 67
// TFLOP/s FP32, 495 TF32, 989 FP16/BF16 and 1979 FP8 dense tensor TFLOP/s, 132 SMs).
const (
	hbmBytesPerSec  = 3.35e12
	fp32FlopsPerSec = 67e12
	tf32FlopsPerSec = 495e12
	halfFlopsPerSec = 989e12  // f16 and bf16 tensor cores, dense
	fp8FlopsPerSec  = 1979e12 // e4m3 and e5m2 tensor cores, dense (the fp8 GEMM's operands)
	h100SMs         = 132
)

// The block shapes of codegen's templates (docs/codegen.md), for estimating how many blocks a
// kernel launches: 256-thread loop blocks, 128×128 contraction tiles, 32-column reduction tiles.
const (
	loopThreads = 256
	matmulTile  = 128
	columnTile  = 32
	attnRows    = 4 // query rows per block of the attention template (a warp each)
)

// CostModel labels modeled_time_us in every report: it is a model, not a measurement.
const CostModel = "H100 SXM roofline model (not a measurement): per kernel max(DRAM bytes / 3.35 TB/s, flops / peak) " +
	"divided by min(1, blocks / 132 SMs), peak 67 TFLOP/s FP32, 495 TF32, 989 BF16/FP16 dense for contractions; " +
	"plus 3.25 µs per launch on a stream, 0.875 µs per kernel of a CUDA graph (CUDA.jl's measurement)"

// kernelCost models one kernel: its DRAM traffic, flops, estimated blocks and time on the GPU
// without the launch overhead.
func kernelCost(k *Kernel, tf32 bool) KernelStats {
	ks := KernelStats{Name: k.Name, Kind: k.Kind.String(), Blocks: blocks(k, tf32)}
	users := map[*ir.Value][]*ir.Value{}
	for _, v := range k.Body.Values {
		for _, a := range v.Args {
			users[a] = append(users[a], v)
		}
	}
	for _, in := range k.Body.Inputs() {
		ks.ReadBytes += footprint(in, users) * int64(in.Type.DType.Size())
	}
	peak := fp32FlopsPerSec
	for _, v := range k.Body.Values {
		if v.Op != ops.AttentionLSEOp || len(k.Body.Outputs) == 1 { // else the forward's softmax gives it
			ks.Flops += flops(v)
		}
		if v.Op == "constant" && len(v.Attrs.Floats("value")) > 1 {
			ks.ReadBytes += int64(v.Type.Bytes()) // a table of literals lives in memory
		}
		switch {
		case attnmma.Fits(v):
			peak = halfFlopsPerSec
		case v.Op == ops.AttentionGradOp:
			if _, ok := attnmma.GradTakes(v); ok { // dk/dv or dq on tensor cores
				peak = halfFlopsPerSec
			}
		case tf32 && attnmma.FitsTF32(v):
			peak = tf32FlopsPerSec
		}
		if isContractionOp(v.Op) {
			switch d := v.Args[0].Type.DType; {
			case d == ir.F16 || d == ir.BF16:
				peak = halfFlopsPerSec
			case d.IsFP8(): // kept fp8 from sm_89 (passes/fp8.go)
				peak = fp8FlopsPerSec
			case d == ir.F32 && tf32:
				peak = tf32FlopsPerSec
			}
		}
	}
	if p, ok := gemvPlan(k); ok {
		// A split GEMV writes its f32 partials to scratch; each tile's last block reads them
		// back and zeroes them.
		ks.ReadBytes += 4 * int64(p.PartialFloats())
		ks.WriteBytes += 8 * int64(p.PartialFloats())
	}
	if p, ok := decodePlan(k); ok {
		// A split-KV attention, likewise: each row's maximum, sum and outputs per chunk.
		ks.ReadBytes += 4 * int64(p.PartialFloats())
		ks.WriteBytes += 8 * int64(p.PartialFloats())
	}
	if k.RowPasses > 1 {
		ks.ReadBytes *= int64(k.RowPasses) // a streamed row is read once per pass
	}
	for _, b := range k.Writes {
		ks.WriteBytes += b.Bytes()
	}
	if k.InPlace {
		// An update in place reads and writes the update's elements; the rest of its operand,
		// which is its result, is never touched. An attention kernel appending the step's rows
		// to its caches (appendkv.go) reads them whole, as attention, and writes the rows.
		for _, p := range updatePairs(k) {
			if k.Kind == Update {
				ks.ReadBytes -= p.in.Bytes()
			}
			ks.WriteBytes -= p.out.Bytes()
		}
		ks.WriteBytes += appendedBytes(k)
	}
	share := min(1, float64(ks.Blocks)/h100SMs) // fewer blocks than SMs leave SMs idle
	ks.ModeledTimeUS = max(float64(ks.ReadBytes+ks.WriteBytes)/hbmBytesPerSec, float64(ks.Flops)/peak) / share * 1e6
	// A GEMV's norm prologue reads its rows from L2 in every block before the k loop starts.
	ks.ModeledTimeUS += float64(prologueL2Bytes(k)) / l2BytesPerSec * 1e6
	return ks
}

func isContractionOp(op string) bool { return op == "dot_general" || op == "conv2d" }

// blocks estimates how many blocks codegen launches for k: one per 256 elements of a loop, one
// per 128×128 tile of a contraction's result (times its batch; a product of at most 8 rows:
// the GEMV plan's blocks), one per row of a row reduction
// (one per 32 columns where the reduced axis is not the innermost; one per 256 elements of a
// full reduction, which splits), one for a persistent kernel; an attention kernel launches a
// block per four query rows of a head, or its split-KV plan's blocks for a few rows (the
// tensor-core templates: attnmma's Blocks, and GradTakes's grids for dk/dv and dq).
func blocks(k *Kernel, tf32 bool) int {
	n := k.Space.NumElements()
	switch k.Kind {
	case Persistent:
		return 1
	case Update:
		return max(1, ceilDiv(updateSpace(k).NumElements(), loopThreads))
	case Attention:
		if p, ok := decodePlan(k); ok {
			return p.Blocks()
		}
		for _, v := range k.Body.Values {
			if attnmma.Takes(v, tf32) { // the tensor-core template (codegen/attnmma)
				return attnmma.Blocks(v)
			}
			if n, ok := attnmma.GradTakes(v); ok { // dk/dv or dq on tensor cores
				return n
			}
		}
		if len(k.Space) >= 3 { // [B, H, L, Ev] or attention_lse's [B, H, L]: a block per attnRows
			// query rows of a head; dk and dv's [B, KVH, S, E]: a block per attnRows keys
			return max(1, k.Space[0]*k.Space[1]*ceilDiv(k.Space[2], attnRows))
		}
	case Contraction:
		if p, ok := gemvPlan(k); ok {
			return p.Blocks()
		}
		s := k.Space
		if len(s) < 2 {
			return 1
		}
		b := ceilDiv(s[len(s)-1], matmulTile) * ceilDiv(s[len(s)-2], matmulTile)
		for _, d := range s[:len(s)-2] {
			b *= d
		}
		return max(1, b)
	case Row:
		reduced := 1
		inner := false
		for _, a := range k.Axes {
			reduced *= k.Space[a]
			inner = inner || a == len(k.Space)-1
		}
		rows := n / max(1, reduced)
		switch {
		case rows <= 1:
			return max(1, ceilDiv(n, loopThreads))
		case !inner:
			return ceilDiv(rows, columnTile)
		}
		return rows
	}
	return max(1, ceilDiv(n, loopThreads))
}

// decodePlan is the split-KV plan of an attention kernel codegen gives the decoding template
// (a few query rows per head): over a symbolic batch (a buffer it reads leads with a symbolic
// dim), the split for every batch up to the bound (codegen/ptx's symattn_decode.go); over a
// symbolic cache length (K's buffer's length is symbolic), the split for every length up to the
// bound (symattn_decode_len.go).
func decodePlan(k *Kernel) (splitkv.Plan, bool) {
	if k.Kind != Attention || k.Body == nil {
		return splitkv.Plan{}, false
	}
	symbolic := func(b *Buffer, axis int) bool {
		if len(b.Type.Sym) <= axis {
			return false
		}
		_, c := b.Type.Sym[axis].IsConst()
		return !c
	}
	for _, v := range k.Body.Values {
		if v.Op == ops.AttentionOp {
			anyBatch := slices.ContainsFunc(k.Reads, func(b *Buffer) bool { return symbolic(b, 0) })
			if base, _, _, ok := ops.StridedView(v.Args[1]); ok && base.Op == ir.OpInput && len(base.Type.Shape) == 4 &&
				slices.ContainsFunc(k.Reads, func(b *Buffer) bool { return b.Name == base.Name && symbolic(b, 2) }) {
				return splitkv.OfAnyLength(v, anyBatch)
			}
			if anyBatch {
				return splitkv.OfAnyBatch(v)
			}
			return splitkv.Of(v)
		}
	}
	return splitkv.Plan{}, false
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// Programmatic dependent launch (sm_90; codegen/ptx pdl.go, runtime/cuda pdl.go). The CUDA
// Programming Guide ("Programmatic Dependent Launch and Synchronization") says a kernel launched
// with programmatic stream serialization may be launched, and run what comes before its
// griddepcontrol.wait, while the kernel before it still runs; it gives no figure for how much of
// the launch overhead that hides, and we found no published measurement of it in a replayed CUDA
// graph. The model therefore charges every kernel its 0.875 µs, PDL or not, and only reports,
// labelled as an assumption, the bound where each dependent launch hides all of it (Stats.
// ModeledGraphPDLBoundUS). The kernels' own times stay: the work before the wait (a GEMV's first
// weights) reads DRAM the kernel before it is already saturating.

// pdlKernels counts the per-run kernels codegen/ptx writes for programmatic dependent launch
// at sm (every kernel but a custom one, from sm_90) that have a kernel before them in the run to
// overlap: the first kernel of a run has none.
func pdlKernels(kg *KernelGraph, sm int) int {
	if sm < 90 {
		return 0
	}
	n, first := 0, true
	for _, k := range kg.Kernels {
		if k.BindTime {
			continue
		}
		if !first && k.Kind != Custom {
			n++
		}
		first = false
	}
	return n
}

// launchesUS is the launch overhead of n kernels, on a stream or in a CUDA graph.
func launchesUS(n int, graph bool) float64 {
	if graph {
		return float64(n) * graphLaunchUS
	}
	return float64(n) * launchUS
}
