package check

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/internal/tolerance"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/tensor"
)

// Report is the outcome of one check.
type Report struct {
	Outputs []Output
	Kernels []executor.KernelRun
	Memory  executor.MemStats
	SimTime time.Duration // wall time of the simulated run
	RefTime time.Duration // wall time of the reference interpreter
	// Notes are the plan's kernel notes ("kernel: note"), e.g. a tf32 fallback to FFMA.
	Notes []string
	// Variant names the specialization the run took ("batch in [1,4]"), "" for a plan without.
	Variant string
}

// Output compares one model output.
type Output struct {
	Name   string
	Type   ir.Type
	MaxAbs float64 // largest |got − want|
	MaxRel float64 // largest |got − want| / |want| over elements with want ≠ 0
	// Rel is the allowance per rounding of Prec. Without the graph (CompareIn) an element passes
	// when |got − want| ≤ max(Rel·|want|, Abs), Abs = Rel·RMS(want); with it (CompareBound,
	// Bounded) each element has its own bound and Abs is the largest finite one.
	Rel, Abs float64
	Bounded  bool
	Free     int // elements whose bound is infinite: the arithmetic does not determine them
	// FreeOff counts the Free elements outside the dtype's tolerance (CompareIn's rule:
	// max(Rel·|want|, Rel·RMS(want))). They do not fail the output: the arithmetic allows any
	// value there (a compare that may flip, a near-singular rsqrt). Reported as a hint.
	FreeOff int
	// Prec is the float type the output was computed in (tolerance.Precision), whose tolerance
	// Rel is: an f16 result cast to an f64 output is held to f16's.
	Prec  ir.DType
	Worst float64 // largest |got − want| / max(Rel·|want|, Abs): ≤ 1 passes
	Bad   int     // elements outside the tolerance, NaN against a number, or a zero of the wrong sign
	NaN   int     // elements where both are NaN, as ops.md defines: they agree and pass
	First string  // the first bad element, described
}

// Pass reports whether the output is within tolerance everywhere.
func (o Output) Pass() bool { return o.Bad == 0 }

// Pass reports whether every output passed.
func (r *Report) Pass() bool {
	for _, o := range r.Outputs {
		if !o.Pass() {
			return false
		}
	}
	return true
}

// Run loads a on a fresh simulated device, runs it on inputs and params with
// all checks on, runs the reference interpreter on the plan's source graph
// with the same values, and compares. An error means the run itself failed
// (for example a memcheck report); a mismatch is a Report that does not Pass.
func Run(a *artifact.Artifact, inputs, params map[string]*tensor.Tensor) (*Report, error) {
	return RunWith(simdev.Options{}, a, inputs, params)
}

// RunWith is Run on a simulated device with options opt (for example the
// global race check and a block order).
func RunWith(opt simdev.Options, a *artifact.Artifact, inputs, params map[string]*tensor.Tensor) (*Report, error) {
	g, err := a.Plan.SourceGraph()
	if err != nil {
		return nil, err
	}
	dev := simdev.New(opt)
	defer dev.Close()
	prog, err := executor.Load(dev, a)
	if err != nil {
		return nil, err
	}
	defer prog.Close()
	if err := prog.SetParams(params); err != nil {
		return nil, err
	}
	start := time.Now()
	got, err := prog.Run(inputs)
	if err != nil {
		return nil, err
	}
	rep := &Report{Kernels: got.Kernels, Memory: prog.Memory(), SimTime: time.Since(start), Notes: a.Plan.Notes(), Variant: prog.Variant()}
	start = time.Now()
	want, err := ref.Run(g, inputs, params)
	if err != nil {
		return nil, fmt.Errorf("reference interpreter: %v", err)
	}
	rep.RefTime = time.Since(start)
	if len(g.Dims) > 0 { // the bounds are computed on the graph at the run's sizes
		if g, err = instantiate(g, inputs); err != nil {
			return nil, err
		}
	}
	bounds, err := tolerance.Bounds(g, inputs, params, a.Plan.TF32)
	if err != nil {
		return nil, fmt.Errorf("error bounds: %v", err)
	}
	for _, v := range g.Outputs {
		want := tolerance.Bound{Val: want[v.Name], Err: bounds[v.Name].Err}
		rep.Outputs = append(rep.Outputs, CompareBound(v.Name, got.Outputs[v.Name], want, tolerance.Precision(v.Value), a.Plan.TF32))
	}
	return rep, nil
}

// Compare compares got with want element by element, held to the tolerance of want's dtype.
func Compare(name string, got, want *tensor.Tensor, tf32 bool) Output {
	return CompareIn(name, got, want, want.Type.DType, tf32)
}

// CompareIn compares got with want element by element, held to the tolerance of prec, the float
// type the value was computed in (integers and bools: exactly), without knowing how want was
// computed: |got − want| ≤ max(Rel·|want|, Abs) with the floor Abs = Rel·RMS(want). NaN passes only
// against NaN, and a zero only against a zero of the same sign.
func CompareIn(name string, got, want *tensor.Tensor, prec ir.DType, tf32 bool) Output {
	o := Output{Name: name, Type: want.Type, Prec: prec}
	if want.Type.DType.IsFloat() {
		o.Rel, _ = tolerance.Tolerance(prec, tf32, 0)
	}
	ws := make([]float64, want.Len())
	for i := range ws {
		ws[i] = want.At(i)
	}
	o.Abs = tolerance.OutputFloor(o.Rel, ws)
	compare(&o, got, want, func(_ int, w float64) float64 { return max(o.Rel*math.Abs(w), o.Abs) },
		func(_ int, g, w float64) bool { return tolerance.Agree(g, w, o.Rel, o.Abs) })
	return o
}

// CompareBound compares got with want.Val element by element, element i held to its own error
// bound want.At(i) (tolerance.Bounds: the rounding a correct kernel may commit, following the
// magnitudes of the terms each result combines; integers and bools computed exactly: 0). prec and
// tf32 are reported (Rel: the allowance per rounding of prec). Special values as
// tolerance.AgreeBound says.
func CompareBound(name string, got *tensor.Tensor, want tolerance.Bound, prec ir.DType, tf32 bool) Output {
	o := Output{Name: name, Type: want.Val.Type, Prec: prec, Bounded: true}
	if want.Val.Type.DType.IsFloat() {
		o.Rel, _ = tolerance.Tolerance(prec, tf32, 0)
	}
	ws := make([]float64, want.Val.Len())
	for i := range ws {
		ws[i] = want.Val.At(i)
		if b := want.At(i); !math.IsInf(b, 1) {
			o.Abs = max(o.Abs, b)
		} else {
			o.Free++
		}
	}
	floor := tolerance.OutputFloor(o.Rel, ws)
	compare(&o, got, want.Val, func(i int, _ float64) float64 { return want.At(i) },
		func(i int, g, w float64) bool {
			if math.IsInf(want.At(i), 1) && want.Val.Type.DType.IsFloat() && !tolerance.Agree(g, w, o.Rel, floor) {
				o.FreeOff++
			}
			return tolerance.AgreeBound(g, w, want.At(i))
		})
	return o
}

// compare fills o from got and want: bound(i, w) is element i's allowed error, ok(i, g, w) whether
// it passes.
func compare(o *Output, got, want *tensor.Tensor, bound func(i int, w float64) float64, ok func(i int, g, w float64) bool) {
	name := o.Name
	if got == nil || !got.Type.Equal(want.Type) {
		o.Bad = want.Len()
		o.First = fmt.Sprintf("the device returned %v, the reference %s", typeOf(got), want.Type)
		return
	}
	for i := range want.Len() {
		g, w := got.At(i), want.At(i)
		if !want.Type.DType.IsFloat() && got.I[i] != want.I[i] {
			// Integers compare exactly as integers: i64 values beyond 2^53 collapse as floats
			// (MinInt64+1 and MinInt64 are both -2^63).
			// With a bound below 1 (an integer computed exactly) they must be equal.
			if !o.Bounded || bound(i, w) < 1 || !ok(i, g, w) {
				if o.Bad == 0 {
					o.First = fmt.Sprintf("%s%s = %d, want %d", name, index(want.Type.Shape, i), got.I[i], want.I[i])
				}
				o.Bad++
				o.MaxAbs = max(o.MaxAbs, math.Abs(g-w))
				o.Worst = math.Inf(1)
			}
			continue
		}
		if math.IsNaN(g) && math.IsNaN(w) {
			o.NaN++
			continue
		}
		d := math.Abs(g - w)
		if math.IsNaN(d) {
			d = math.Inf(1)
		}
		o.MaxAbs = max(o.MaxAbs, d)
		if w != 0 && !math.IsInf(w, 0) && !math.IsNaN(w) {
			o.MaxRel = max(o.MaxRel, d/math.Abs(w))
		}
		if b := bound(i, w); d > 0 && !math.IsInf(b, 1) {
			o.Worst = max(o.Worst, d/b)
		}
		if !ok(i, g, w) {
			if o.Bad == 0 {
				o.First = fmt.Sprintf("%s%s = %v, want %v", name, index(want.Type.Shape, i), g, w)
			}
			o.Bad++
		}
	}
}

func typeOf(t *tensor.Tensor) string {
	if t == nil {
		return "nothing"
	}
	return t.Type.String()
}

// index formats flat index i of shape as [a,b,c] ("" for a scalar).
func index(shape ir.Shape, i int) string {
	if len(shape) == 0 {
		return ""
	}
	idx := make([]string, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		c := 0
		if shape[d] > 0 {
			c, i = i%shape[d], i/shape[d]
		}
		idx[d] = strconv.Itoa(c)
	}
	return "[" + strings.Join(idx, ",") + "]"
}

// WriteTable prints the per-output and per-kernel tables.
func (r *Report) WriteTable(w io.Writer) {
	bounded := len(r.Outputs) > 0
	for _, o := range r.Outputs {
		bounded = bounded && o.Bounded
	}
	col, legend := "abs floor", "an element passes when |got − want| ≤ max(rel tol·|want|, abs floor); abs floor = rel tol·RMS(want)"
	if bounded {
		col, legend = "max bound", "an element passes when |got − want| ≤ its own error bound: rel tol per rounding, times the magnitudes of the terms each op combines (max bound: the largest)"
	}
	fmt.Fprintf(w, "%-16s %-18s %10s %10s %10s %10s %10s  %s\n", "output", "type", "max abs", "max rel", "rel tol", col, "err/tol", "result")
	for _, o := range r.Outputs {
		res := "ok"
		if o.Free > 0 {
			within := "all within"
			if o.FreeOff > 0 {
				within = fmt.Sprintf("%d of them outside", o.FreeOff)
			}
			res = fmt.Sprintf("ok (%d elements not determined by the arithmetic; %s %s's tolerance)", o.Free, within, o.Prec)
		}
		if !o.Pass() {
			res = fmt.Sprintf("FAIL: %d elements, first %s", o.Bad, o.First)
		}
		fmt.Fprintf(w, "%-16s %-18s %10.3g %10.3g %10.3g %10.3g %10.3g  %s\n", o.Name, o.Type, o.MaxAbs, o.MaxRel, o.Rel, o.Abs, o.Worst, res)
	}
	fmt.Fprintln(w, legend)
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%-34s %14s %12s %10s %9s\n", "kernel", "grid×block", "warp insts", "coalesced", "conflicts")
	var total executor.Counters
	for _, k := range r.Kernels {
		c := k.Counters
		if c == nil {
			c = &executor.Counters{}
		}
		total.Add(c)
		fmt.Fprintf(w, "%-34s %14s %12d %9.1f%% %9d\n", k.Name, dims(k.Grid, k.Block), c.WarpInsts, 100*c.Coalescing(), c.SharedBankConflicts)
	}
	fmt.Fprintf(w, "%-34s %14s %12d %9.1f%% %9d\n", fmt.Sprintf("total (%d kernels)", len(r.Kernels)), "", total.WarpInsts, 100*total.Coalescing(), total.SharedBankConflicts)
	for _, n := range r.Notes {
		fmt.Fprintln(w, "note: "+n)
	}
}

func dims(grid, block [3]int) string {
	return fmt.Sprintf("%d×%d", grid[0]*grid[1]*grid[2], block[0]*block[1]*block[2])
}

// instantiate is g, which has dims, at the sizes of inputs.
func instantiate(g *ir.Graph, inputs map[string]*tensor.Tensor) (*ir.Graph, error) {
	shapes := map[string]ir.Shape{}
	for name, t := range inputs {
		shapes[name] = t.Type.Shape
	}
	env, err := g.BindSizes(shapes)
	if err != nil {
		return nil, err
	}
	return ops.Instantiate(g, env)
}
