package nvvm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gcomp/gcomp/codegen/nvvm/libnvvm"
	"github.com/gcomp/gcomp/codegen/plan"
	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/internal/ptxas"
	"github.com/gcomp/gcomp/internal/tolerance"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/passes"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/sim"
	"github.com/gcomp/gcomp/tensor"
)

// The differential harness: a kernel's PTX from libNVVM assembles for sm_80 and sm_90 without
// spills, runs in the simulator with memcheck, racecheck and synccheck, matches the reference
// interpreter, and matches codegen/ptx's PTX on the same inputs bit for bit where every op is
// exact.

var (
	producerOnce sync.Once
	producer     *Producer
)

// requireProducer returns a Producer with libNVVM loaded, or skips (see libnvvm.Require).
func requireProducer(t *testing.T) *Producer {
	t.Helper()
	libnvvm.Require(t)
	producerOnce.Do(func() { producer = &Producer{} })
	return producer
}

func kernelOf(kn *passes.Kernel, name string) plan.Kernel {
	k := plan.Kernel{Name: name, Graph: kn.Body, Shared: kn.SharedOffsets(), SharedBytes: int(kn.SharedBytes), InPlace: kn.InPlace}
	for _, s := range kn.Stages {
		k.Stages = append(k.Stages, plan.Kernel{Name: s.Name, Graph: s.Body})
	}
	return k
}

// supported splits kernels into those the NVVM producer takes and the names of the others (with
// the template they need); any other error fails the test.
func supported(t *testing.T, kernels []plan.Kernel) (yes []plan.Kernel, no []string) {
	t.Helper()
	for _, k := range kernels {
		_, _, err := IR([]plan.Kernel{k}, plan.Target{SM: 80})
		switch {
		case err == nil:
			yes = append(yes, k)
		case Refused(err):
			no = append(no, err.Error())
		default:
			t.Errorf("%v", err)
		}
	}
	return yes, no
}

var localDepot = regexp.MustCompile(`(?s)\.entry\s+([\w$]+)\(.*?\.local \.align \d+ \.b8\s+__local_depot\d+\[(\d+)\]`)

// trigFrame is the stack frame of libdevice's sin and cos: their Payne–Hanek reduction of large
// arguments keeps its partial products in a local array, 48 bytes for f64 (__nv_sin, __nv_cos)
// and 32 for f32 (__nv_sinf, __nv_cosf; promoted to registers in small kernels, not beside a
// tiled contraction's 64 accumulators) as ptxas reports them for sm_80 and sm_90. It is not a
// spill.
//
// Each call site of that slow path also passes the quadrant by pointer, a 4-byte slot of the
// entry's own local depot: a kernel whose loop libNVVM versions calls it from more sites and has a
// larger depot, and the depot (declared, not spilled) is allowed on top.
func trigFrame(g *ir.Graph) int {
	frame := 0
	for _, v := range g.Values {
		if v.Op == "sin" || v.Op == "cos" {
			switch v.Type.DType {
			case ir.F64:
				frame = max(frame, 48)
			case ir.F32, ir.F16, ir.BF16:
				frame = max(frame, 32)
			}
		}
	}
	return frame
}

// assemble runs ptxas on a libNVVM module for sm_80 and sm_90 and fails the test on errors,
// spills, or a stack frame (but trigFrame in a kernel computing a sin or cos);
// it returns the registers per kernel and arch.
func assemble(t *testing.T, text string, kernels []plan.Kernel) map[string]map[string]int {
	t.Helper()
	ptxas.Require(t)
	frame := map[string]int{}
	for _, k := range kernels {
		frame[k.Name] = trigFrame(k.Graph)
	}
	for _, e := range strings.Split(text, ".visible ")[1:] {
		if end := strings.Index(e, "\n}"); end >= 0 {
			e = e[:end] // the entry alone
		}
		if m := localDepot.FindStringSubmatch(e); m != nil && frame[m[1]] > 0 {
			n, _ := strconv.Atoi(m[2])
			frame[m[1]] += (n + 7) / 8 * 8
		}
	}
	regs := map[string]map[string]int{}
	for _, arch := range []string{"sm_80", "sm_90"} {
		res, err := ptxas.Assemble([]byte(text), arch)
		if err != nil {
			t.Fatalf("ptxas %s: %v", arch, err)
		}
		for _, k := range res.Kernels {
			if k.SpillStores != 0 || k.SpillLoads != 0 || k.StackBytes > frame[k.Name] {
				t.Errorf("%s %s: spills or stack: %+v", arch, k.Name, k)
			}
			if regs[k.Name] == nil {
				regs[k.Name] = map[string]int{}
			}
			regs[k.Name][arch] = k.Registers
		}
	}
	return regs
}

// approximate ops are computed by libdevice in one producer and by codegen/ptx's own
// sequences in the other: both within tolerance, not bit-identical.
var approximate = map[string]bool{"exp": true, "log": true, "tanh": true, "sigmoid": true, "erf": true,
	"sin": true, "cos": true, "rsqrt": true, "pow": true}

// reassociates reports whether g has a float sum or product reduction. The reference
// accumulates in float64 in its fixed sequential order (docs/ops.md), both generators in the
// same tree (thread, warp, block, split): in float64 the last bits of the two orders differ, so
// such a kernel is held to the reference within tolerance, and to codegen/ptx still bit for bit.
func reassociates(g *ir.Graph) bool {
	for _, v := range g.Values {
		if (v.Op == "reduce_sum" || v.Op == "reduce_prod") && v.Type.DType.IsFloat() {
			return true
		}
	}
	return false
}

// persistentFloatDot reports whether k is persistent with a float contraction: its stages
// accumulate f32 products with fma.rn.f32 in f32, and lane-split stages sum the lanes' partials
// in a tree (both producers, in the same order), not in the reference's sequential float64, so
// it is held to the reference within tolerance, to codegen/ptx bit for bit.
func persistentFloatDot(k plan.Kernel) bool {
	for _, st := range k.Stages {
		for _, v := range st.Graph.Values {
			if (v.Op == "dot_general" || v.Op == "conv2d") && v.Type.DType.IsFloat() {
				return true
			}
		}
	}
	return false
}

// tiled reports whether k's contraction runs in a tiled template, which accumulates in f32 (the
// FFMA template, in ascending k with one rounding per fma) where the reference sums in float64:
// such a kernel is held to the reference within tolerance, to codegen/ptx bit for bit.
func tiled(k plan.Kernel) bool {
	kind := contractionKind(k)
	return kind != "" && kind != "direct" && kind != "gemv"
}

// contractionKind is k's plan.ContractionPlan kind, "" for other kernels. A "gemv" kernel runs
// here in the direct template (exact), in codegen/ptx in f32 GEMV blocks: the two agree within
// tolerance, not bit for bit.
func contractionKind(k plan.Kernel) string {
	if plan.Template(k) != "contraction" {
		return ""
	}
	c, err := plan.ContractionPlan(k, plan.Target{SM: 80})
	if err != nil {
		return ""
	}
	return c.Kind
}

// contractionLen is the longest dot_general or conv2d contraction of g (1 if none).
func contractionLen(g *ir.Graph) int {
	k := 1
	for _, v := range g.Values {
		switch v.Op {
		case "dot_general":
			n := 1
			for _, d := range v.Attrs.Ints("lhs_contract") {
				n *= v.Args[0].Type.Shape[d]
			}
			k = max(k, n)
		case "conv2d":
			w := v.Args[1].Type.Shape // [O, C/groups, KH, KW]
			k = max(k, w[1]*w[2]*w[3])
		}
	}
	return k
}

// exactKernel reports whether every op of g rounds once (IEEE) or is exact.
func exactKernel(g *ir.Graph) bool {
	for _, v := range g.Values {
		if approximate[v.Op] {
			return false
		}
	}
	return true
}

// precision is the least precise float dtype computed in g (its results are held to that
// dtype's tolerance), or the output's dtype if no float is computed.
func precision(g *ir.Graph, out *ir.Value) ir.DType {
	rank := map[ir.DType]int{ir.F64: 1, ir.F32: 2, ir.F16: 3, ir.BF16: 4}
	p := out.Type.DType
	for _, v := range g.Values {
		if d := v.Type.DType; rank[d] > rank[p] {
			p = d
		}
	}
	return p
}

// run loads text in a fresh simulator device (checks on), launches kernel once with in bound
// as l says, and returns the outputs and the stats. The inputs' gather indices are inside their
// tables: the error word must stay zero.
func run(t *testing.T, text string, k plan.Kernel, l plan.Launch, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *sim.Stats) {
	t.Helper()
	out, st, word := runWord(t, text, k, l, in)
	if strings.Trim(string(word), "\x00") != "" {
		t.Errorf("%s: error word %x after a run with valid indices", k.Name, word)
	}
	return out, st
}

// runWord is run, returning the launch's error word too (nil if the kernel has none).
func runWord(t *testing.T, text string, k plan.Kernel, l plan.Launch, in map[string]*tensor.Tensor) (map[string]*tensor.Tensor, *sim.Stats, []byte) {
	t.Helper()
	sr := loadRun(t, text, k, l, in)
	st, err := sr.m.Launch(sr.entry, sr.cfg, sr.args...)
	if err != nil {
		t.Fatalf("sim launch %s: %v", k.Name, err)
	}
	sr.checkScratch(t, false)
	word, out := sr.read(t)
	return out, st, word
}

// simRun is a kernel loaded in a fresh simulator device with its arguments bound.
type simRun struct {
	dev     *sim.Device
	m       *sim.Module
	k       plan.Kernel
	l       plan.Launch
	entry   string
	cfg     sim.Config
	args    []any
	outAddr map[string]uint64
}

// loadRun loads text in a fresh simulator device (checks on) and binds k's arguments as l says,
// with in's values and zeroed scratch.
func loadRun(t *testing.T, text string, k plan.Kernel, l plan.Launch, in map[string]*tensor.Tensor) *simRun {
	t.Helper()
	dev := sim.NewDevice()
	m, err := dev.Load(text)
	if err != nil {
		t.Fatalf("sim load: %v", err)
	}
	g := k.Graph
	sr := &simRun{dev: dev, m: m, k: k, l: l, entry: k.Name, outAddr: map[string]uint64{}}
	for _, a := range l.Params {
		var typ ir.Type
		var data []byte
		switch a.Kind {
		case plan.ArgInput, plan.ArgParam:
			typ, data = in[a.Name].Type, in[a.Name].Bytes()
		case plan.ArgOutput:
			typ = g.Outputs[a.Index].Value.Type
		case plan.ArgScratch:
			typ, data = ir.T(ir.U8, a.Bytes), make([]byte, a.Bytes)
		case plan.ArgError:
			typ, data = ir.T(ir.U8, plan.ErrorWordBytes), make([]byte, plan.ErrorWordBytes)
		case plan.ArgSize:
			sr.args = append(sr.args, uint32(0)) // the caller's (symRun)
			continue
		}
		addr, err := dev.Alloc(max(typ.Bytes(), 1))
		if err != nil {
			t.Fatal(err)
		}
		if len(data) > 0 {
			if err := dev.Write(addr, data); err != nil {
				t.Fatal(err)
			}
		}
		if a.Kind == plan.ArgOutput {
			sr.outAddr[a.Name] = addr
		}
		sr.args = append(sr.args, addr)
	}
	sr.cfg = sim.Config{Grid: sim.Dim3{X: l.Grid[0], Y: l.Grid[1], Z: l.Grid[2]},
		Block: sim.Dim3{X: l.Block[0], Y: l.Block[1], Z: l.Block[2]}, SharedBytes: l.SharedBytes}
	if l.Entry != "" {
		sr.entry = l.Entry // a kernel equal to an earlier one up to names runs its entry
	}
	return sr
}

// checkScratch fails the test unless the launch left its scratch's counter (all of it: whole)
// zero for the next launch.
func (sr *simRun) checkScratch(t *testing.T, whole bool) {
	t.Helper()
	for i, a := range sr.l.Params {
		if a.Kind != plan.ArgScratch {
			continue
		}
		buf := make([]byte, a.Bytes)
		if err := sr.dev.Read(sr.args[i].(uint64), buf); err != nil {
			t.Fatal(err)
		}
		if !whole {
			buf = buf[len(buf)-8:]
		}
		if strings.Trim(string(buf), "\x00") != "" {
			t.Errorf("%s: scratch left at %x", sr.k.Name, buf)
		}
	}
}

// read returns the error word (nil if the kernel has none) and the outputs.
func (sr *simRun) read(t *testing.T) ([]byte, map[string]*tensor.Tensor) {
	t.Helper()
	l, g, dev, args := sr.l, sr.k.Graph, sr.dev, sr.args
	var word []byte
	for i, a := range l.Params {
		if a.Kind == plan.ArgError {
			word = make([]byte, plan.ErrorWordBytes)
			if err := dev.Read(args[i].(uint64), word); err != nil {
				t.Fatal(err)
			}
		}
	}
	out := map[string]*tensor.Tensor{}
	for _, o := range g.Outputs {
		buf := make([]byte, o.Value.Type.Bytes())
		if err := dev.Read(sr.outAddr[o.Name], buf); err != nil {
			t.Fatal(err)
		}
		x, err := tensor.FromBytes(o.Value.Type, buf)
		if err != nil {
			t.Fatal(err)
		}
		out[o.Name] = x
	}
	return word, out
}

// checkKernel runs k's NVVM PTX (text, a module holding it, launch l) and codegen/ptx's, and
// compares the NVVM results with the reference (tolerance rule) and with the PTX emitter's
// (bit for bit where the kernel is exact).
func checkKernel(t *testing.T, text string, k plan.Kernel, l plan.Launch, seed uint64, target plan.Target) *sim.Stats {
	t.Helper()
	st, _ := checkKernelIn(t, text, k, l, inputsFor(k.Graph, seed), target)
	return st
}

// checkKernelIn is checkKernel on inputs in; it returns the simulator's stats of the NVVM
// entry and of codegen/ptx's.
func checkKernelIn(t *testing.T, text string, k plan.Kernel, l plan.Launch, in map[string]*tensor.Tensor, target plan.Target) (nvvmStats, ptxStats *sim.Stats) {
	t.Helper()
	got, st := run(t, text, k, l, in)
	pin := map[string]*tensor.Tensor{}
	for _, v := range k.Graph.Params() {
		pin[v.Name] = in[v.Name]
	}
	iin := map[string]*tensor.Tensor{}
	for _, v := range k.Graph.Inputs() {
		iin[v.Name] = in[v.Name]
	}
	want, err := ref.Run(k.Graph, iin, pin)
	if err != nil {
		t.Fatalf("reference: %v", err)
	}
	ptxText, launches, err := ptx.Module([]plan.Kernel{k}, target)
	if err != nil {
		t.Fatalf("codegen/ptx: %v", err)
	}
	emitted, pst := run(t, ptxText, k, launches[0], in)
	if tpl := plan.Template(k); tpl == "attention" || tpl == "attention backward" { // no error-bound rule: attention's own tolerance
		for _, o := range k.Graph.Outputs {
			// attention_grad reads the forward's o and log-sum-exp, which random inputs are not:
			// codegen/ptx's bits alone (TestAttentionGradKernel holds it to the reference).
			if o.Value.Op != ops.AttentionGradOp {
				checkAttention(t, got[o.Name], want[o.Name])
			}
			compare(t, o.Name+" (codegen/ptx)", got[o.Name], emitted[o.Name], true, o.Value.Type.DType, false, 0)
		}
		return st, pst
	}
	bounds, err := tolerance.Bounds(k.Graph, iin, pin, target.TF32)
	if err != nil {
		t.Fatalf("error bounds: %v", err)
	}
	exact := exactKernel(k.Graph)
	refExact := exact && !reassociates(k.Graph) && !persistentFloatDot(k) && !tiled(k)
	for _, o := range k.Graph.Outputs {
		b := bounds[o.Name]
		compareWith(t, o.Name+" (reference)", got[o.Name], want[o.Name], refExact, precision(k.Graph, o.Value), target.TF32, contractionLen(k.Graph), &b)
		if exact {
			gemv := contractionKind(k) == "gemv"
			compare(t, o.Name+" (codegen/ptx)", got[o.Name], emitted[o.Name], !gemv, precision(k.Graph, o.Value), target.TF32, contractionLen(k.Graph))
		}
	}
	return st, pst
}

// compare holds got to want: bit for bit when exact or not a float, else within the tolerance
// of dtype prec (f32's under tf32 when tf32 is set) for a contraction of length k (the inputs
// are at most 1 in magnitude). NaN passes against NaN.
func compare(t *testing.T, what string, got, want *tensor.Tensor, exact bool, prec ir.DType, tf32 bool, k int) {
	t.Helper()
	compareWith(t, what, got, want, exact, prec, tf32, k, nil)
}

// compareWith is compare, where an inexact element also passes within its own error bound
// (tolerance.Bounds, the rule gcomp check applies): a value whose error a later op magnifies
// (a sin of a quotient by a small dot product) is beyond the flat tolerance and within its bound.
func compareWith(t *testing.T, what string, got, want *tensor.Tensor, exact bool, prec ir.DType, tf32 bool, k int, bound *tolerance.Bound) {
	t.Helper()
	bad := 0
	d := want.Type.DType
	for i := 0; i < want.Len(); i++ {
		g, w := got.At(i), want.At(i)
		var msg string
		switch {
		case math.IsNaN(g) || math.IsNaN(w):
			if !(math.IsNaN(g) && math.IsNaN(w)) {
				msg = fmt.Sprintf("got %v, want %v", g, w)
			}
		case exact || !d.IsFloat() && !prec.IsFloat():
			if math.Float64bits(g) != math.Float64bits(w) {
				msg = fmt.Sprintf("got %v, want %v exactly", g, w)
			}
		case g != w:
			rel, abs := tolerance.Tolerance(prec, tf32, k)
			if !d.IsFloat() {
				abs++ // a float within tolerance may truncate to the next integer
			}
			if !tolerance.Within(g, w, rel, abs) && (bound == nil || !tolerance.AgreeBound(g, w, bound.At(i))) {
				msg = fmt.Sprintf("got %v, want %v (rel %g, abs %g)", g, w, rel, abs)
			}
		}
		if msg != "" {
			if bad < 5 {
				t.Errorf("%s[%d]: %s", what, i, msg)
			}
			bad++
		}
	}
	if bad > 5 {
		t.Errorf("%s: %d of %d elements differ", what, bad, want.Len())
	}
}

// inputsFor draws values for every input and param of g: floats uniform in [-1, 1] (rounded to
// their dtype), integers in [-100, 100] (wrapped), bools 0/1, gather indices inside their table.
func inputsFor(g *ir.Graph, seed uint64) map[string]*tensor.Tensor {
	r := rand.New(rand.NewPCG(seed, 1))
	m := map[string]*tensor.Tensor{}
	for _, v := range append(g.Inputs(), g.Params()...) {
		x := tensor.New(v.Type)
		for i := 0; i < x.Len(); i++ {
			switch {
			case v.Type.DType.IsFloat():
				x.F[i] = tensor.RoundFloat(v.Type.DType, 2*r.Float64()-1)
			case v.Type.DType == ir.Bool:
				x.I[i] = int64(r.IntN(2))
			default:
				x.I[i] = tensor.WrapInt(v.Type.DType, int64(r.IntN(201)-100))
			}
		}
		m[v.Name] = x
	}
	// gather indices stay inside their table, inside the smallest one where several gathers
	// share them (a persistent kernel's stages may index two tables with one input)
	rows := map[string]int{}
	var names []string
	for _, v := range g.Values {
		if v.Op == "gather" && (v.Args[1].Op == ir.OpInput || v.Args[1].Op == ir.OpParam) {
			name, n := v.Args[1].Name, v.Args[0].Type.Shape[0]
			if old, ok := rows[name]; !ok || n < old {
				if !ok {
					names = append(names, name)
				}
				rows[name] = n
			}
		}
	}
	for _, name := range names {
		idx := m[name]
		for i := range idx.I {
			idx.I[i] = int64(r.IntN(rows[name]))
		}
	}
	return m
}

// checkModule compiles kernels into one module with p, assembles it, and runs every kernel
// through checkKernel as a subtest (kernel i with seed seed+i).
func checkModule(t *testing.T, p *Producer, kernels []plan.Kernel, seed uint64) {
	t.Helper()
	checkModuleFor(t, p, kernels, seed, plan.Target{SM: 80})
}

// checkModuleFor is checkModule for target (sm_80, with or without tf32).
func checkModuleFor(t *testing.T, p *Producer, kernels []plan.Kernel, seed uint64, target plan.Target) {
	t.Helper()
	if len(kernels) == 0 {
		return
	}
	text, launches, err := p.Module(kernels, target)
	if err != nil {
		t.Fatal(err)
	}
	assemble(t, text, kernels)
	for i, k := range kernels {
		t.Run(k.Name, func(t *testing.T) {
			checkKernel(t, text, k, launches[i], seed+uint64(i), target)
		})
	}
}
