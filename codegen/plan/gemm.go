package plan

import (
	"github.com/gcomp/gcomp/ir"
)

// The tiled contraction templates' plan, shared with codegen/nvvm: the GEMM a dot_general or
// conv2d is, the tile, the launch, which thread copies which element of each operand's tile and
// which accumulators it holds, so both producers tile, copy and accumulate alike.

// Tile sizes and threads of the 128×128 tiled templates (codegen/ptx's matmul.go).
const (
	GEMMTileM, GEMMTileN, GEMMTileK = 128, 128, 8
	GEMMThreads                     = 256
	GEMMPad                         = 4 // floats of padding per shared row
)

// GEMM is the plan of a tiled contraction: C[b] = A[b]·B[b], M×K times K×N for each of the
// Batch's elements (blockIdx.z), A the dot's lhs (or conv2d's implicit im2col of the image) and
// B its rhs (conv2d's weights).
type GEMM struct {
	Dot     *ir.Value
	M, N, K int
	Batch   ir.Shape
	A, B    GEMMOperand
	Conv    *ConvGEMM // set for conv2d
	// RowCol: the result's dims after the batch dims are [M, N], so an element's coordinates
	// are its row and column (else it is addressed through its linear index).
	RowCol bool
	// ColGroups: 4 consecutive GEMM columns from a multiple of 4 are 4 consecutive elements of
	// one innermost row of the result (an element group).
	ColGroups bool
	// ColPairs: the same for 2 columns, with the result [batch..., M, N] (the tensor-core
	// template's paired stores).
	ColPairs    bool
	Grid, Block [3]int
	// TileN is the block's tile width in GEMM columns: ColRegs (accumulator columns of each
	// thread, 1, 2, 4 or 8) times the 16 thread-grid positions. Both templates narrow it for a
	// conv2d of few output channels (narrowColRegs); elsewhere it is GEMMTileN. The tensor-core
	// template's threads hold 8·ColRegs accumulators alike (MMA.MI·MMA.NI·4).
	TileN, ColRegs int
	// MinBlocksPerSM is the FFMA template's .minnctapersm (0 for none), which caps its
	// registers.
	MinBlocksPerSM int
	// MMA is set for the tensor-core template.
	MMA *MMA
}

// MMA is the tensor-core template's plan (mma.go): each k step of BK elements goes through
// two shared buffers per side; the 8 warps form a grid WarpsN warps wide (warp w at row w /
// WarpsN, column w % WarpsN), and a warp's tile is MI×NI mma tiles of 16×8 (64×32 in a 2×4
// grid for the 128-wide tile; 16×TileN in an 8×1 grid for a narrow one), each mma (Inst)
// KStep deep; Staged epilogues go out through shared memory (StageRow floats per row,
// StageWarpBytes per warp, in the A tile's space) in passes of 16 rows and up to 4 column
// tiles.
type MMA struct {
	EB, BK, KStep  int
	Inst           string
	WarpsN, MI, NI int
	Sides          [2]MMASide
	Staged         bool
	// Quant is set when B is a quantized weight's byte tile, dequantized as the fragments
	// form (quant.go); Sides[1] then copies bytes of B.Buffer, the integers.
	Quant *MMAQuant
}

// MMASide is one side's shared tile: KContig rows of k (else rows of free elements, read with
// ldmatrix.trans, or for tf32 word by word), RowH elements per row (padding included),
// BufBytes per buffer; copies of Chunk elements (cp.async; Elem: 16-bit element copies through
// registers), PerRow to a tile row, copy i of a thread at (DF[i], DK[i]) from its first.
type MMASide struct {
	KContig               bool
	RowH, BufBytes, Chunk int
	Elem                  bool
	PerRow                int
	DF, DK                []int
}

// Staged epilogue geometry (mma.go's stagedEpilogue).
const (
	StageRow       = 40 // floats per staged row
	StageWarpBytes = 16 * StageRow * 4
)

// GEMMOperand addresses one side as [batch...][free][k]: element Off + Σ batch·BatchStrides +
// free·FreeSt + k·KSt of Buffer, or, for a generic operand (View set, Buffer nil), the element of
// View at the coordinates the dims' roles give (free and k delinearized row-major over
// FreeDims and ContractDims).
type GEMMOperand struct {
	Buffer, View                      *ir.Value
	BatchDims, FreeDims, ContractDims []int
	Off                               int
	BatchStrides                      []int
	Free, FreeSt, K, KSt              int
}

// ConvGEMM is a conv2d as implicit GEMM (conv.go): rows are output pixels (row-major over
// [N, OH, OW], or window-major when the epilogue pools over Win), columns a group's output
// channels, k the taps (c, kh, kw) row-major.
type ConvGEMM struct {
	Groups, N, C, H, W, O, KH, KW, OH, OW int
	Stride, Pad, Dil                      [2]int
	Pool                                  *ir.Value
	Win                                   [2]int
}

// CopyMap is which elements of a side's tile (rows free rows by GEMMTileK k) thread tid copies
// at each k step: copy i (of N) is at free row F0(tid)+DF[i] and k KQ(tid)+DK[i] of the tile.
// AlongK maps consecutive threads along k (the operand's contiguous dim), else along the free
// dim, so a warp's copies are coalesced. A tile narrower than 32 rows has fewer elements than
// the block has threads: only threads below Threads copy.
type CopyMap struct {
	AlongK     bool
	Rows       int
	N, Threads int
	DF, DK     [4]int
}

// Copies is the copy map of operand o for a tile of rows free rows.
func (o GEMMOperand) Copies(rows int) CopyMap {
	return copyMap(o.KSt, o.FreeSt, rows)
}

func copyMap(kSt, freeSt, rows int) CopyMap {
	c := CopyMap{AlongK: kSt == 1 && freeSt != 1, Rows: rows, N: max(1, rows*GEMMTileK/GEMMThreads), Threads: min(GEMMThreads, rows*GEMMTileK)}
	for i := range c.N {
		if c.AlongK {
			c.DF[i] = i * GEMMThreads / GEMMTileK
		} else {
			c.DK[i] = i * GEMMThreads / rows
		}
	}
	return c
}

// RegTileOffset is the tile row (or column) of register i (0..7) of a thread at position p of
// the 16×16 thread grid: p·4 + RegTileOffset(i), so a warp's 128-bit shared loads are
// contiguous.
func RegTileOffset(i int) int { return (i/4)*64 + i%4 }

// RegColStep is the tile column step between thread-grid positions for a thread holding regs
// accumulator columns: column j of the thread at p is p·RegColStep(regs) + RegTileOffset(j)
// (4 for the 8-column blocks of the 128-wide tile; a narrower block's columns are consecutive,
// read with one 2- or 4-wide shared load).
func RegColStep(regs int) int { return min(regs, 4) }
