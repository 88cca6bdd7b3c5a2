package ptx

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/gcomp/gcomp/internal/ptxas"
	"github.com/gcomp/gcomp/internal/tolerance"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/sim"
	"github.com/gcomp/gcomp/tensor"
)

// result is what one checked kernel reports.
type result struct {
	ptx   string
	regs  map[string]int // ptxas registers per arch
	stats *sim.Stats
	out   map[string]*tensor.Tensor
}

// checkKernel generates k, assembles it for sm_80 and sm_90 (no errors, no spills), runs it in
// the simulator with all checks on and compares every output with the reference interpreter:
// bit-exact when exact, else within the dtype's tolerance.
func checkKernel(t *testing.T, k Kernel, in map[string]*tensor.Tensor, exact bool) *result {
	t.Helper()
	res := runKernel(t, k, in)
	if res == nil {
		return nil
	}
	want, err := ref.Run(k.Graph, pick(k.Graph.Inputs(), in), pick(k.Graph.Params(), in))
	if err != nil {
		t.Fatalf("%s: reference: %v", k.Name, err)
	}
	k2, scale := contraction(k.Graph, in)
	for _, o := range k.Graph.Outputs {
		compare(t, k.Name+" "+o.Name, res.out[o.Name], want[o.Name], exact, precision(o.Value), k2, scale)
	}
	return res
}

// precision is the dtype whose tolerance a result is held to: the least precise float type
// computed on the way to it (an f32 result cast to f64 carries f32 rounding; inputs and casts
// that widen add none). An integer result computed from floats (a cast at the end) gets the
// floats' precision, and compare allows its cast one unit on top of their tolerance.
func precision(v *ir.Value) ir.DType {
	d := v.Type.DType
	if !d.IsFloat() {
		d = ir.F64
		if !computesFloats(v) {
			return v.Type.DType
		}
	}
	seen := map[*ir.Value]bool{}
	var walk func(u *ir.Value)
	walk = func(u *ir.Value) {
		if seen[u] || u.Op == ir.OpInput || u.Op == ir.OpParam || u.Op == "constant" {
			return
		}
		seen[u] = true
		if coarser(u.Type.DType, d) {
			d = u.Type.DType
		}
		for _, a := range u.Args {
			walk(a)
		}
	}
	walk(v)
	return d
}

// computesFloats reports whether any value v depends on inside the kernel is a float.
func computesFloats(v *ir.Value) bool {
	if v.Op == ir.OpInput || v.Op == ir.OpParam {
		return false
	}
	if v.Type.DType.IsFloat() {
		return true
	}
	for _, a := range v.Args {
		if computesFloats(a) {
			return true
		}
	}
	return false
}

// coarser reports whether float dtype a has a wider tolerance than b (non-floats never do).
func coarser(a, b ir.DType) bool {
	rank := map[ir.DType]int{ir.F64: 1, ir.F32: 2, ir.F16: 3, ir.BF16: 3}
	return rank[a] > rank[b] && b.IsFloat()
}

// contraction returns the length K of the longest contraction (dot_general or conv2d) in g (1
// without one) and the largest max|a|·max|b| of its operands, found through movement ops in the
// inputs in: the absolute floor of tolerance.Tolerance is rel·√K for unit-scale operands, scaled
// by that product (docs/codegen.md, "Tolerances").
func contraction(g *ir.Graph, in map[string]*tensor.Tensor) (k int, scale float64) {
	k = 1
	for _, v := range g.Values {
		n := 0
		switch v.Op {
		case "dot_general":
			n = 1
			for _, d := range v.Attrs.Ints("lhs_contract") {
				n *= v.Args[0].Type.Shape[d]
			}
		case "conv2d":
			w := v.Args[1].Type.Shape
			n = w[1] * w[2] * w[3]
		default:
			continue
		}
		k = max(k, n)
		scale = max(scale, maxAbs(v.Args[0], in)*maxAbs(v.Args[1], in))
	}
	return k, scale
}

// maxAbs bounds the magnitude of v's elements: the largest |x| over the buffers v is a view of,
// 1 when v is computed (the tests' computed operands stay near unit scale).
func maxAbs(v *ir.Value, in map[string]*tensor.Tensor) float64 {
	switch v.Op {
	case ir.OpInput, ir.OpParam:
		m := 0.0
		if x := in[v.Name]; x != nil && x.Type.DType.IsFloat() {
			for _, f := range x.F {
				m = max(m, math.Abs(f))
			}
		}
		return m
	case "broadcast_in_dim", "transpose", "reshape", "slice":
		return maxAbs(v.Args[0], in)
	}
	return 1
}

func pick(vs []*ir.Value, all map[string]*tensor.Tensor) map[string]*tensor.Tensor {
	m := map[string]*tensor.Tensor{}
	for _, v := range vs {
		m[v.Name] = all[v.Name]
	}
	return m
}

var ptxasCache sync.Map // PTX text + arch → ptxas's report per kernel

// assembleInfo runs ptxas for one arch (once per text), fails on spills or a stack frame, and
// returns what ptxas reports for each kernel (registers, static shared memory).
func assembleInfo(t *testing.T, text, arch string) map[string]ptxas.KernelInfo {
	t.Helper()
	ptxas.Require(t)
	key := arch + "\x00" + text
	if r, ok := ptxasCache.Load(key); ok {
		return r.(map[string]ptxas.KernelInfo)
	}
	r, err := ptxas.Assemble([]byte(text), arch)
	if err != nil {
		t.Fatalf("ptxas %s: %v", arch, err)
	}
	info := map[string]ptxas.KernelInfo{}
	for _, ki := range r.Kernels {
		if ki.SpillStores != 0 || ki.SpillLoads != 0 || ki.StackBytes != 0 {
			t.Errorf("%s %s: spills %d/%d bytes, stack %d", arch, ki.Name, ki.SpillStores, ki.SpillLoads, ki.StackBytes)
		}
		info[ki.Name] = ki
	}
	ptxasCache.Store(key, info)
	return info
}

// assembleArch is assembleInfo's registers per kernel.
func assembleArch(t *testing.T, text, arch string) map[string]int {
	t.Helper()
	regs := map[string]int{}
	for name, ki := range assembleInfo(t, text, arch) {
		regs[name] = ki.Registers
	}
	return regs
}

// assemble returns the most registers any kernel of text uses, per arch.
func assemble(t *testing.T, text string) map[string]int {
	t.Helper()
	regs := map[string]int{}
	for _, arch := range []string{"sm_80", "sm_90"} {
		for _, n := range assembleArch(t, text, arch) {
			regs[arch] = max(regs[arch], n)
		}
	}
	return regs
}

var assembledEntries sync.Map // entries a batch already assembled

// harnessTarget is the target runKernel generates for (tests that change it restore it).
var harnessTarget = Target{SM: 80}

func batched(entry string) bool {
	_, ok := assembledEntries.Load(entry)
	return ok
}

// assembleModule assembles kernels as one module for sm_80 and sm_90 (no spills, no stack) and
// returns ptxas's report per kernel for each arch; runKernel then skips them.
func assembleModule(t *testing.T, kernels []Kernel) map[string]map[string]ptxas.KernelInfo {
	t.Helper()
	text, _, err := Module(kernels, Target{SM: 80})
	if err != nil {
		t.Fatal(err)
	}
	info := map[string]map[string]ptxas.KernelInfo{}
	for _, arch := range []string{"sm_80", "sm_90"} {
		info[arch] = assembleInfo(t, text, arch)
	}
	for _, k := range kernels {
		entry, _, _ := Generate(k, Target{SM: 80})
		assembledEntries.Store(entry, true)
	}
	return info
}

// assembleBatch assembles many kernels in one module (one ptxas run per arch instead of one per
// kernel); runKernel then skips assembling them again.
func assembleBatch(t *testing.T, kernels []Kernel) {
	t.Helper()
	text, _, err := Module(kernels, Target{SM: 80})
	if err != nil {
		t.Fatal(err)
	}
	assemble(t, text)
	for _, k := range kernels {
		entry, _, _ := Generate(k, Target{SM: 80})
		assembledEntries.Store(entry, true)
	}
}

// runKernel generates, assembles and simulates k on the given inputs and params.
func runKernel(t *testing.T, k Kernel, in map[string]*tensor.Tensor) *result {
	t.Helper()
	text, launches, err := Module([]Kernel{k}, harnessTarget)
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
	res := &result{ptx: text, out: map[string]*tensor.Tensor{}}
	if entry, _, _ := Generate(k, harnessTarget); !batched(entry) {
		res.regs = assemble(t, text)
	}
	l, g := launches[0], k.Graph
	run, err := launchSim(t, text, k.Name, l, g, in)
	if err != nil {
		t.Fatalf("sim launch %v: %v", l, err)
	}
	dev, m, args, outAddr, cfg, st := run.dev, run.m, run.args, run.outAddr, run.cfg, run.stats
	for i, a := range l.Params {
		if a.Kind != ArgScratch {
			continue
		}
		// A scratch buffer is left zero, and a second launch gives the same bits.
		buf := make([]byte, a.Bytes)
		if err := dev.Read(args[i].(uint64), buf); err != nil {
			t.Fatal(err)
		}
		// Every byte: partials as well as counters are left zero for the next kernel.
		for j, c := range buf {
			if c != 0 {
				t.Errorf("scratch byte %d of %d left at %#x", j, len(buf), c)
				break
			}
		}
		first := make([]byte, g.Outputs[0].Value.Type.Bytes())
		if err := dev.Read(outAddr[g.Outputs[0].Name], first); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Launch(k.Name, cfg, args...); err != nil {
			t.Fatalf("second launch: %v", err)
		}
		again := make([]byte, len(first))
		if err := dev.Read(outAddr[g.Outputs[0].Name], again); err != nil {
			t.Fatal(err)
		}
		if string(again) != string(first) {
			t.Errorf("second launch differs: %x vs %x", again, first)
		}
	}
	res.stats = st
	for _, o := range g.Outputs {
		buf := make([]byte, o.Value.Type.Bytes())
		if err := dev.Read(outAddr[o.Name], buf); err != nil {
			t.Fatal(err)
		}
		x, err := tensor.FromBytes(o.Value.Type, buf)
		if err != nil {
			t.Fatal(err)
		}
		res.out[o.Name] = x
	}
	return res
}

// simRun is one launch of a generated module on a fresh simulator device.
type simRun struct {
	dev     *sim.Device
	m       *sim.Module
	args    []any
	outAddr map[string]uint64 // output name → device address
	errAddr uint64            // the error word, if the kernel has one
	cfg     sim.Config
	stats   *sim.Stats
}

// launchSim loads text on a fresh simulator device, binds l's parameters (inputs and parameters
// from in, outputs uninitialized, scratch zeroed) and launches kernel once. Load and binding
// problems fail the test; the launch's own error is returned.
func launchSim(t *testing.T, text, kernel string, l Launch, g *ir.Graph, in map[string]*tensor.Tensor) (*simRun, error) {
	t.Helper()
	dev := sim.NewDevice()
	m, err := dev.Load(text)
	if err != nil {
		t.Fatalf("sim load: %v\n%s", err, text)
	}
	run := &simRun{dev: dev, m: m, outAddr: map[string]uint64{}}
	for _, a := range l.Params {
		var typ ir.Type
		var data []byte
		switch a.Kind {
		case ArgInput, ArgParam:
			x := in[a.Name]
			if x == nil {
				t.Fatalf("no value for %s", a.Name)
			}
			typ, data = x.Type, x.Bytes()
		case ArgOutput:
			typ = g.Outputs[a.Index].Value.Type
		case ArgScratch:
			typ, data = ir.T(ir.U8, a.Bytes), make([]byte, a.Bytes)
		case ArgError:
			typ, data = ir.T(ir.U8, ErrorWordBytes), make([]byte, ErrorWordBytes)
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
		if a.Kind == ArgOutput {
			run.outAddr[a.Name] = addr
		}
		if a.Kind == ArgError {
			run.errAddr = addr
		}
		run.args = append(run.args, addr)
	}
	run.cfg = sim.Config{Grid: sim.Dim3{X: l.Grid[0], Y: l.Grid[1], Z: l.Grid[2]},
		Block: sim.Dim3{X: l.Block[0], Y: l.Block[1], Z: l.Block[2]}, SharedBytes: l.SharedBytes}
	run.stats, err = m.Launch(kernel, run.cfg, run.args...)
	return run, err
}

// errorWord reads the launch's error word: site, element and value (all 0 without a record).
func (r *simRun) errorWord(t *testing.T) (site, elem uint64, value int64) {
	t.Helper()
	if r.errAddr == 0 {
		t.Fatal("the kernel has no error word")
	}
	w := make([]byte, ErrorWordBytes)
	if err := r.dev.Read(r.errAddr, w); err != nil {
		t.Fatal(err)
	}
	return binary.LittleEndian.Uint64(w), binary.LittleEndian.Uint64(w[8:]), int64(binary.LittleEndian.Uint64(w[16:]))
}

// compare holds every element of got to want: bit for bit when exact (or not a float), else
// within tolerance.Tolerance for dtype prec, a contraction of length k and operands up to scale.
func compare(t *testing.T, what string, got, want *tensor.Tensor, exact bool, prec ir.DType, k int, scale float64) {
	t.Helper()
	bad := 0
	for i := 0; i < want.Len(); i++ {
		if msg := mismatchK(want.Type.DType, prec, got.At(i), want.At(i), exact, k, scale); msg != "" {
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

func mismatch(d ir.DType, got, want float64, exact bool) string {
	return mismatchK(d, d, got, want, exact, 1, 1)
}

// mismatchK describes how got fails want (a d element computed at precision prec), or returns "". Unlike tolerance.Within, NaN passes
// against NaN: the tests feed NaN on purpose and check that it propagates.
func mismatchK(d, prec ir.DType, got, want float64, exact bool, k int, scale float64) string {
	if math.IsNaN(want) || math.IsNaN(got) {
		if math.IsNaN(want) && math.IsNaN(got) {
			return ""
		}
		return fmt.Sprintf("got %v, want %v", got, want)
	}
	if exact || !d.IsFloat() && !prec.IsFloat() {
		if math.Float64bits(got) != math.Float64bits(want) {
			return fmt.Sprintf("got %v, want %v exactly", got, want)
		}
		return ""
	}
	if got == want {
		return ""
	}
	rel, abs := tolerance.Tolerance(prec, harnessTarget.TF32, k)
	abs = tolerance.Scale(abs, scale, 1) // scale is already max|a|·max|b|
	if !d.IsFloat() {
		abs++ // a float within tolerance may truncate to the next integer
	}
	if !tolerance.Within(got, want, rel, abs) {
		return fmt.Sprintf("got %v, want %v (rel %g, abs %g)", got, want, rel, abs)
	}
	return ""
}

// random returns a tensor of type ty with values drawn for its dtype: floats uniform in
// [-scale, scale], integers across a small range including negatives.
func random(r *rand.Rand, ty ir.Type, scale float64) *tensor.Tensor {
	x := tensor.New(ty)
	for i := 0; i < x.Len(); i++ {
		switch {
		case ty.DType.IsFloat():
			x.F[i] = tensor.RoundFloat(ty.DType, (2*r.Float64()-1)*scale)
		case ty.DType == ir.Bool:
			x.I[i] = int64(r.IntN(2))
		default:
			x.I[i] = tensor.WrapInt(ty.DType, int64(r.IntN(201)-100))
		}
	}
	return x
}

// inputsFor draws random values for every input and param of g.
func inputsFor(g *ir.Graph, seed uint64, scale float64) map[string]*tensor.Tensor {
	r := rand.New(rand.NewPCG(seed, 1))
	m := map[string]*tensor.Tensor{}
	for _, v := range append(g.Inputs(), g.Params()...) {
		m[v.Name] = random(r, v.Type, scale)
	}
	// gather indices stay inside their table (outside, the kernel traps: TestGather), inside
	// the smallest one where several gathers share them
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

func parse(t *testing.T, src string) *ir.Graph {
	t.Helper()
	g, err := ir.Parse("test.gir", []byte(src))
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, src)
	}
	return g
}

// assembleBatchRenamed is assembleBatch for kernels that share a name: each is assembled under a
// numbered name, and registered under its own.
func assembleBatchRenamed(t *testing.T, kernels []Kernel) {
	t.Helper()
	renamed := make([]Kernel, len(kernels))
	for i, k := range kernels {
		renamed[i] = Kernel{Name: fmt.Sprintf("%s_%d", k.Name, i), Graph: k.Graph}
	}
	assembleBatch(t, renamed)
	for _, k := range kernels {
		entry, _, _ := Generate(k, Target{SM: 80})
		assembledEntries.Store(entry, true)
	}
}

func replaceAll(s, old, new string) string { return strings.ReplaceAll(s, old, new) }

func nan() float64 { return math.NaN() }
