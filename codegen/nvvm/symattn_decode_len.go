package nvvm

import (
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/codegen/splitkv"
	"github.com/gcomp/gcomp/ir/sym"
)

// Split-KV decoding over a symbolic cache length, as codegen/ptx's symattn_decode_len.go: a
// decoding step's attention whose keys and values have a length S known at launch (a cache grown
// by concatenation), its heads, query length and head dims static (plan.SymDecodeLength). The
// split is planned once for every length up to the bound (splitkv.ForLengths): the chunk, the
// partials' and tickets' layout in scratch are the bound's. A run uses the first ⌈S/Chunk⌉
// chunks (at least one): a block whose chunk is at or past them returns before touching memory,
// the (batch entry, KV head)'s ticket counts only the run's chunks and the last block combines
// and zeroes only theirs, in chunk order: codegen/ptx's sums, bit for bit.
//
// The parameters are codegen/ptx's: the buffers, each dim the sizes name (i32), the scratch,
// then the work's size: over a static batch S's expression (the grid's x the run's chunks: tile
// Chunk along axis 0), over a symbolic batch the batch's (grid.z, as symattn_decode.go; x stays
// the bound's Splits). K, V, the positions and a bias are read at the run's strides (operandOf).

// symDecodeLengthPlan is symbolic attention kernel k's split-KV plan over a symbolic cache length
// and its batch's and S's expressions (plan.SymDecodeLength); false otherwise.
func symDecodeLengthPlan(k plan.Kernel, p plan.AttentionPlan) (splitkv.Plan, sym.Expr, sym.Expr, bool) {
	if !k.Symbolic || k.Sizes == nil {
		return splitkv.Plan{}, sym.Expr{}, sym.Expr{}, false
	}
	return plan.SymDecodeLength(p.Op, k.Sizes)
}

// symDecodeLengthArgs appends the work's size to a kernel's parameters (its buffers, dims and
// scratch) and returns its work: the batch along grid.z over a symbolic batch, else the run's
// chunks along grid.x.
func symDecodeLengthArgs(sp splitkv.Plan, batch, length sym.Expr, args []plan.Arg) ([]plan.Arg, *plan.SymWork) {
	if _, c := batch.IsConst(); !c {
		return symDecodeArgs(batch.String(), args)
	}
	args = append(args, plan.Arg{Kind: plan.ArgSize, Expr: length.String()})
	return args, &plan.SymWork{Vector: 1, MaxBlocks: sp.Splits, Scale: 1, Tile: sp.Chunk, Axis: 0, Elements: length.String()}
}

// symDecodeLength binds the dims of kernel k (parameters args) and computes S, the run's chunk
// count ⌈S/Chunk⌉ (one at least: S = 0 is one chunk of no keys, rows 0/0 = NaN) and the last
// one's index; L stays the bound's.
func (ag *attnGen) symDecodeLength(k plan.Kernel, sp splitkv.Plan, args []plan.Arg) error {
	kg, p := ag.kg, ag.p
	sv := kg.newSymView(k, args)
	length := plan.SymSizes(p.Op.Args[1], k.Sizes)[2]
	if err := sv.valid(length); err != nil {
		return err
	}
	ag.sym = &symAttn{sv: sv, l: ci(p.L), lLast: ci(p.L - 1), s: sv.eval(length)}
	chunks := kg.b.NewUDiv(kg.add(ag.sym.s, ci(sp.Chunk-1)), ci(sp.Chunk))
	ag.sym.chunks = kg.b.NewSelect(kg.b.NewICmp(enum.IPredUGT, chunks, ci(1)), chunks, ci(1))
	ag.sym.lastChunk = kg.sub(ag.sym.chunks, ci(1))
	return nil
}

// exitPastChunks returns from a block whose chunk (the grid's x) is at or past the run's.
func (ag *attnGen) exitPastChunks() {
	kg := ag.kg
	past := kg.b.NewICmp(enum.IPredUGE, kg.sreg("ctaid.x"), ag.sym.chunks)
	exit, on := kg.block("past_chunks"), kg.block("in_chunks")
	kg.b.NewCondBr(past, exit, on)
	exit.NewRet(nil)
	kg.b = on
}

// dimSplits and dimLastSplit are the chunks a run combines and the last one's index: the bound's
// immediates, the run's over a symbolic cache length.
func (ag *attnGen) dimSplits(sp splitkv.Plan) value.Value {
	if ag.sym == nil {
		return ci(sp.Splits)
	}
	return ag.sym.chunks
}

func (ag *attnGen) dimLastSplit(sp splitkv.Plan) value.Value {
	if ag.sym == nil {
		return ci(sp.Splits - 1)
	}
	return ag.sym.lastChunk
}
