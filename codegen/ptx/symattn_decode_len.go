package ptx

import (
	"fmt"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/codegen/splitkv"
)

// Split-KV decoding over a symbolic cache length: a decoding step's attention whose keys and
// values have a length S known at launch (a cache grown by concatenation, ONNX's
// past_key_values: K [b, h, past+1, d]), its heads, query length and head dims static
// (plan.SymDecodeLength). The split is planned once for every length up to the bound
// (splitkv.ForLengths): the chunk is an immediate, and so are the partials' and tickets' layout
// in scratch (the bound's Splits per (batch entry, KV head)). A run uses the first ⌈S/Chunk⌉ chunks: the kernel computes that count from S, a
// block whose chunk is at or past it exits before touching memory, the (batch entry, KV head)'s
// ticket counts only the run's chunks and the combine reads and zeroes only theirs. Launching
// every chunk of the bound with the chunks past S publishing empty partials would combine
// correctly too, but would launch, ticket and combine up to Splits−1 blocks of nothing at every
// short S; this way the last block's combine is over the run's chunks alone, and the scratch of
// the chunks past them is never touched (zero, as every run leaves it).
//
// K, V, the position vector and a bias are read through their strides at the run's sizes
// (symOperand: buffers are contiguous at the run's S), the keys' limit is clamped to the run's
// S. With a static batch the grid's x is the run's chunk count (SymWork: tile Chunk along axis
// 0, Elements S's expression); over a symbolic batch too, the grid's z is the run's batch as in
// symattn_decode.go (tile 1 along axis 2) and x stays the bound's Splits, the blocks past the
// run's chunks exiting. The dims are .u32 parameters after the buffers, then the scratch, then
// the work's size.

// symDecodeLength returns the split-KV plan of symbolic attention kernel k when it decodes over a
// symbolic cache length (plan.SymDecodeLength); false otherwise.
func symDecodeLength(k Kernel, p AttentionPlan) (splitkv.Plan, bool) {
	if !k.Symbolic || k.Sizes == nil {
		return splitkv.Plan{}, false
	}
	sp, _, _, ok := plan.SymDecodeLength(p.Op, k.Sizes)
	return sp, ok
}

// symDecodeDims declares each dim kernel k's sizes name as a size parameter and computes S at
// the run's sizes (the query length and the chunk count stay the bound's and the run's below).
func (w *attnWriter) symDecodeDims(k Kernel, params *[]string, args *[]Arg) error {
	w.sym = &symAttn{dims: map[string]string{}, l: uimm(w.p.L), lLast: uimm(w.p.L - 1)}
	for _, n := range symDimNames(k.Sizes) {
		r := w.reg("b32")
		w.ins("ld.param.u32", r, "["+w.sizeParam(k, n, params, args)+"]")
		w.sym.dims[n] = r
	}
	var err error
	w.sym.s, err = w.eval(SymSizes(w.p.Op.Args[1], k.Sizes)[2])
	return err
}

// sizeParam declares a .u32 size parameter of expression expr and returns its name.
func (w *attnWriter) sizeParam(k Kernel, expr string, params *[]string, args *[]Arg) string {
	param := fmt.Sprintf("%s_param_%d", k.Name, len(*args))
	*params = append(*params, "\t.param .u32 "+param)
	*args = append(*args, Arg{Kind: ArgSize, Expr: expr})
	return param
}

// symDecodeLengthWork declares the work's size (the batch's expression over a symbolic batch,
// else S's), computes the run's chunk count ⌈S/Chunk⌉ and sends a block past the run's chunks or
// batch to the kernel's end. It returns the work and the kernel's note.
func (w *attnWriter) symDecodeLengthWork(k Kernel, sp splitkv.Plan, params *[]string, args *[]Arg) (*SymWork, string) {
	_, batch, length, _ := plan.SymDecodeLength(w.p.Op, k.Sizes)
	end := "$" + w.name + "_end"
	w.sym.chunks, w.sym.lastChunk = w.reg("b32"), w.reg("b32")
	w.ins("add.s32", w.sym.chunks, w.sym.s, uimm(sp.Chunk-1))
	w.ins("div.u32", w.sym.chunks, w.sym.chunks, uimm(sp.Chunk))
	w.ins("max.u32", w.sym.chunks, w.sym.chunks, "1") // S = 0: one chunk of no keys, rows 0/0 = NaN
	w.ins("sub.s32", w.sym.lastChunk, w.sym.chunks, "1")
	x, past := w.reg("b32"), w.reg("pred")
	w.ins("mov.u32", x, "%ctaid.x")
	w.ins("setp.ge.u32", past, x, w.sym.chunks)
	w.ins("@"+past+" bra.uni", end)
	over := " over cache length " + length.String() + ","
	if _, c := batch.IsConst(); !c {
		param := w.sizeParam(k, batch.String(), params, args)
		n, z := w.reg("b32"), w.reg("b32")
		w.ins("ld.param.u32", n, "["+param+"]")
		w.ins("mov.u32", z, "%ctaid.z")
		w.ins("setp.ge.u32", past, z, n)
		w.ins("@"+past+" bra.uni", end)
		return &SymWork{Vector: 1, MaxBlocks: 65535, Scale: 1, Tile: 1, Axis: 2, Elements: batch.String()},
			" over batch " + batch.String() + " and cache length " + length.String() + ","
	}
	w.sizeParam(k, length.String(), params, args)
	return &SymWork{Vector: 1, MaxBlocks: sp.Splits, Scale: 1, Tile: sp.Chunk, Axis: 0, Elements: length.String()}, over
}

// dimSplits and dimLastSplit are the chunks a run combines and the last one's index:
// immediates at the bound's S, registers over a symbolic cache length.
func (w *attnWriter) dimSplits(sp splitkv.Plan) string {
	if w.sym == nil {
		return uimm(sp.Splits)
	}
	return w.sym.chunks
}

func (w *attnWriter) dimLastSplit(sp splitkv.Plan) string {
	if w.sym == nil {
		return uimm(sp.Splits - 1)
	}
	return w.sym.lastChunk
}
