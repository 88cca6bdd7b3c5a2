package nvvm

import (
	"fmt"

	"github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/enum"
	"github.com/llir/llvm/ir/types"
	"github.com/llir/llvm/ir/value"

	"github.com/gcomp/gcomp/codegen/plan"
	irg "github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/tensor"
)

// eval computes graph value v at index x, as codegen/ptx's gen does: movement ops transform the
// index, elementwise ops compute, inputs load.
func (kg *kgen) eval(v *irg.Value, x *index) (value.Value, error) {
	key := cacheKey{v, x}
	if r, ok := kg.cache[key]; ok {
		return r, nil
	}
	r, err := kg.eval1(v, x)
	if err != nil {
		return nil, err
	}
	kg.cache[key] = r
	return r, nil
}

func (kg *kgen) eval1(v *irg.Value, x *index) (value.Value, error) {
	if r, ok := kg.bound[v]; ok {
		return r, nil
	}
	if f, ok := kg.at[v]; ok {
		if r := f(x); r != nil {
			return r, nil
		}
	}
	d := v.Type.DType
	switch v.Op {
	case irg.OpInput, irg.OpParam:
		return kg.load(d, kg.ptr[v], kg.lin(x)), nil
	case "constant":
		return kg.constant(v, x), nil
	case "iota":
		return kg.cast(irg.I32, kg.coord(x, v.Attrs.Int("dim", 0)), d), nil
	case "broadcast_in_dim", "transpose", "reshape", "slice":
		if src, sub := kg.repeatLane(v, x); src != nil {
			return kg.eval(src, sub)
		}
		if op := kg.viewLane(v, x); op != nil {
			return kg.eval(v.Args[0], op)
		}
		return kg.eval(v.Args[0], kg.operandIndex(v, x))
	case "pad":
		return kg.pad(v, x)
	case "concat":
		return kg.concat(v, x)
	case "gather":
		return kg.gather(v, x)
	case ops.DequantizeOp:
		return kg.dequantize(v, x)
	case "max_pool2d", "avg_pool2d":
		return kg.pool(v, x)
	case "philox_uniform":
		return kg.philox(v, x)
	}
	if ops.ClassOf(v.Op) != ops.Elementwise {
		return nil, fmt.Errorf("%s cannot be computed inside this kernel", v.Op)
	}
	args := make([]value.Value, len(v.Args))
	for i, a := range v.Args {
		r, err := kg.eval(a, x)
		if err != nil {
			return nil, err
		}
		args[i] = r
	}
	return kg.elementwise(v, args)
}

// elementwise computes elementwise op v of its operands' values args.
func (kg *kgen) elementwise(v *irg.Value, args []value.Value) (value.Value, error) {
	d := v.Type.DType
	switch {
	case v.Op == "select":
		return kg.b.NewSelect(args[0], args[1], args[2]), nil
	case len(args) == 1:
		return kg.unary(v.Op, v.Args[0].Type.DType, args[0], d)
	case len(args) == 2:
		return kg.binary(v.Op, v.Args[0].Type.DType, args[0], args[1])
	}
	return nil, fmt.Errorf("%s is not supported by the NVVM code generator", v.Op)
}

// operandIndex maps index x of view v to the index of its operand holding the same element.
func (kg *kgen) operandIndex(v *irg.Value, x *index) *index {
	op := v.Args[0]
	if v.Op == "reshape" {
		return newIndexLin(op.Type.Shape, kg.lin(x))
	}
	c := make([]value.Value, op.Type.Shape.Rank())
	for _, ax := range plan.ViewPlan(v) {
		if ax.Dim < 0 {
			c[ax.Operand] = ci(ax.Offset)
		} else {
			c[ax.Operand] = kg.add(kg.mul(kg.coord(x, ax.Dim), ax.Scale), ci(ax.Offset))
		}
	}
	return newIndexCoords(op.Type.Shape, c)
}

// elemPtr is the address of element lin of the buffer at p.
func (kg *kgen) elemPtr(d irg.DType, p, lin value.Value) value.Value {
	gep := kg.b.NewGetElementPtr(memType(d), p, lin)
	gep.InBounds = true
	return gep
}

// load reads one element into its register form.
func (kg *kgen) load(d irg.DType, p, lin value.Value) value.Value {
	ld := kg.b.NewLoad(memType(d), kg.elemPtr(d, p, lin))
	ld.Align = kg.align(d, lin)
	return kg.fromMem(d, ld)
}

// align is the alignment of element lin of a buffer of dtype d: a group's first element is
// aligned to the group's bytes (up to maxAlign and the kernel's alignCap), any other to its size.
func (kg *kgen) align(d irg.DType, lin value.Value) ir.Align {
	if v, ok := kg.aligned[lin]; ok {
		a := min(maxAlign(d), v*d.Size())
		if kg.alignCap > 0 {
			a = max(min(a, kg.alignCap), d.Size())
		}
		return ir.Align(a)
	}
	return ir.Align(d.Size())
}

// maxAlign is the alignment promised for a buffer of dtype d: the buffers' 16 bytes, except f16
// (held as half) at 8. With 16, libNVVM 11.8's vectorizer merges eight halves into an
// <8 x half> access its NVPTX backend cannot lower ("unsupported operation"); 8 bytes gives
// <4 x half>, which it lowers.
func maxAlign(d irg.DType) int {
	if d == irg.F16 {
		return 8
	}
	return 16
}

func (kg *kgen) fromMem(d irg.DType, x value.Value) value.Value {
	switch d {
	case irg.F16:
		return kg.b.NewFPExt(x, types.Float)
	case irg.BF16:
		return kg.b.NewBitCast(kg.b.NewShl(kg.b.NewZExt(x, types.I32), ci(16)), types.Float)
	case irg.Bool:
		return kg.b.NewICmp(enum.IPredNE, x, constant.NewInt(types.I8, 0))
	}
	return x
}

// store writes one element of an output (r is already rounded to d).
func (kg *kgen) store(d irg.DType, p, lin, r value.Value) {
	st := kg.b.NewStore(kg.toMem(d, r), kg.elemPtr(d, p, lin))
	st.Align = kg.align(d, lin)
}

// toMem is fromMem's inverse: register form r (already rounded to d) in memory form.
func (kg *kgen) toMem(d irg.DType, r value.Value) value.Value {
	switch d {
	case irg.F16:
		return kg.b.NewFPTrunc(r, types.Half)
	case irg.BF16:
		return kg.b.NewTrunc(kg.b.NewLShr(kg.b.NewBitCast(r, types.I32), ci(16)), types.I16)
	case irg.Bool:
		return kg.b.NewZExt(r, types.I8)
	}
	return r
}

// constVal is the register constant of dtype d with value f (already representable in d).
func constVal(d irg.DType, f float64) constant.Constant {
	switch d {
	case irg.F32, irg.F16, irg.BF16:
		return constant.NewFloat(types.Float, float64(float32(f)))
	case irg.F64:
		return constant.NewFloat(types.Double, f)
	case irg.Bool:
		return constant.NewBool(f != 0)
	case irg.U8:
		return constant.NewInt(types.I8, int64(int8(uint8(f))))
	}
	return constant.NewInt(regType(d).(*types.IntType), plan.ExactInt(f)) // MaxInt64 arrives as 2^63
}

// constant is a splat's value, or an element of a literal tensor (a module-level constant
// array named after the kernel, read at the index).
func (kg *kgen) constant(v *irg.Value, x *index) value.Value {
	d := v.Type.DType
	vals := v.Attrs.Floats("value")
	if len(vals) == 1 {
		return constVal(d, plan.CastConst(d, vals[0]))
	}
	t := tensor.New(v.Type)
	elems := make([]constant.Constant, len(vals))
	for i, f := range vals {
		f = plan.CastConst(d, f)
		if d.IsFloat() {
			t.F[i] = f
		} else {
			t.I[i] = plan.ExactInt(f)
		}
		elems[i] = memConst(d, f)
	}
	name := fmt.Sprintf("%s_const%d", kg.name, v.ID)
	gv := kg.md.globals[name]
	if gv == nil {
		arr := constant.NewArray(types.NewArray(uint64(len(elems)), memType(d)), elems...)
		gv = kg.md.m.NewGlobalDef(name, arr)
		gv.Immutable = true
		gv.Linkage = enum.LinkageInternal
		gv.AddrSpace = 1
		gv.Typ.AddrSpace = 1
		gv.Align = 8
		kg.md.globals[name] = gv
	}
	p := kg.b.NewGetElementPtr(gv.ContentType, gv, ci(0), kg.lin(x))
	p.InBounds = true
	ld := kg.b.NewLoad(memType(d), p)
	ld.Align = ir.Align(d.Size())
	return kg.fromMem(d, ld)
}

// memConst is f's constant in dtype d's memory type.
func memConst(d irg.DType, f float64) constant.Constant {
	switch d {
	case irg.F16:
		return constant.NewFloat(types.Half, f)
	case irg.BF16:
		return constant.NewInt(types.I16, int64(int16(tensor.FloatToBF16(f))))
	case irg.Bool:
		return constant.NewInt(types.I8, int64(f))
	}
	return constVal(d, f)
}

func (kg *kgen) pad(v *irg.Value, x *index) (value.Value, error) {
	op := v.Args[0]
	low := v.Attrs.Ints("low")
	c := make([]value.Value, op.Type.Shape.Rank())
	var inb value.Value
	for i := range c {
		ci := kg.sub(kg.coord(x, i), ci(low[i]))
		if low[i] != 0 || v.Type.Shape[i] != op.Type.Shape[i] {
			p := kg.inRange(ci, op.Type.Shape[i])
			if inb == nil {
				inb = p
			} else {
				inb = kg.b.NewAnd(inb, p)
			}
			ci = kg.clamp(ci, op.Type.Shape[i])
		}
		c[i] = ci
	}
	in, err := kg.eval(op, newIndexCoords(op.Type.Shape, c))
	if err != nil || inb == nil {
		return in, err
	}
	d := v.Type.DType
	return kg.b.NewSelect(inb, in, constVal(d, plan.CastConst(d, v.Attrs.Float("value", 0)))), nil
}

// concat evaluates every operand at its clamped coordinate and selects the one holding the
// element: no branches, and every read stays inside its operand.
func (kg *kgen) concat(v *irg.Value, x *index) (value.Value, error) {
	axis := v.Attrs.Int("axis", 0)
	c := kg.coord(x, axis)
	var r value.Value
	off := 0
	for i, op := range v.Args {
		size := op.Type.Shape[axis]
		oc := make([]value.Value, op.Type.Shape.Rank())
		for d := range oc {
			oc[d] = kg.coord(x, d)
		}
		oc[axis] = kg.clamp(kg.sub(c, ci(off)), size)
		e, err := kg.eval(op, kg.concatLane(v, i, x, op.Type.Shape, oc))
		if err != nil {
			return nil, err
		}
		if r == nil {
			r = e
		} else {
			r = kg.b.NewSelect(kg.b.NewICmp(enum.IPredSGE, c, ci(off)), e, r)
		}
		off += size
	}
	return r, nil
}

// gather reads table[indices[i...], j...]. An index outside the table is recorded in the
// kernel's error word as codegen/ptx's gathers record it (plan.IndexChecks: site, element,
// value; the first thread's compare-and-swap of the site wins) and row 0 is read instead: the
// executor fails the run naming the gather, the element and the index, as the reference does.
func (kg *kgen) gather(v *irg.Value, x *index) (value.Value, error) {
	table, idx := v.Args[0], v.Args[1]
	ri := idx.Type.Shape.Rank()
	ic := make([]value.Value, ri)
	for d := range ic {
		ic[d] = kg.coord(x, d)
	}
	row, err := kg.eval(idx, newIndexCoords(idx.Type.Shape, ic))
	if err != nil {
		return nil, err
	}
	rows := table.Type.Shape[0]
	var bad, index value.Value // index: the index as an i64, for the error word
	if idx.Type.DType == irg.I64 {
		bad = kg.b.NewICmp(enum.IPredUGE, row, constant.NewInt(types.I64, int64(rows)))
		index = row
		row = kg.b.NewTrunc(row, types.I32)
	} else {
		bad = kg.b.NewICmp(enum.IPredUGE, row, ci(rows))
		index = kg.b.NewSExt(row, types.I64)
	}
	kg.badIndex(v, bad, index, idx.Type.Shape, ic)
	row = kg.b.NewSelect(bad, ci(0), row)
	tc := make([]value.Value, table.Type.Shape.Rank())
	tc[0] = row
	for d := 1; d < len(tc); d++ {
		tc[d] = kg.coord(x, ri+d-1)
	}
	return kg.eval(table, newIndexCoords(table.Type.Shape, tc))
}

// badIndex records index, bad where it is outside gather v's table, in the error word: the
// site (from 1) by a compare-and-swap from 0, and the thread that wins it writes the element's
// row-major position in the indices of shape (coords) and the index. A gather the error word
// does not list (none today) can only trap.
func (kg *kgen) badIndex(v *irg.Value, bad, index value.Value, shape irg.Shape, coords []value.Value) {
	record, ok := kg.block("index_bad"), kg.block("index_ok")
	kg.b.NewCondBr(bad, record, ok)
	kg.b = record
	site, listed := kg.sites[v]
	if !listed || kg.errWord == nil {
		kg.b.NewCall(kg.md.declare("llvm.trap", types.Void))
		kg.b.NewUnreachable()
		kg.b = ok
		return
	}
	var elem value.Value = constant.NewInt(types.I64, 0)
	stride := int64(1)
	for d := len(coords) - 1; d >= 0; d-- {
		var c value.Value = kg.b.NewZExt(coords[d], types.I64)
		if stride != 1 {
			c = kg.b.NewMul(c, constant.NewInt(types.I64, stride))
		}
		if d == len(coords)-1 {
			elem = c
		} else {
			elem = kg.b.NewAdd(elem, c)
		}
		stride *= int64(shape[d])
	}
	cas := kg.b.NewCmpXchg(kg.errWord, constant.NewInt(types.I64, 0), constant.NewInt(types.I64, int64(site)),
		enum.AtomicOrderingMonotonic, enum.AtomicOrderingMonotonic)
	won, write := kg.block("index_won"), kg.b
	write.NewCondBr(write.NewExtractValue(cas, 1), won, ok)
	won.NewStore(elem, won.NewGetElementPtr(types.I64, kg.errWord, constant.NewInt(types.I64, 1)))
	won.NewStore(index, won.NewGetElementPtr(types.I64, kg.errWord, constant.NewInt(types.I64, 2)))
	won.NewBr(ok)
	kg.b = ok
}
