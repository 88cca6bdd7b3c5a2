package compiler

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/gcomp/gcomp/artifact"
	"github.com/gcomp/gcomp/codegen/backend"
	"github.com/gcomp/gcomp/codegen/custom"
	"github.com/gcomp/gcomp/codegen/ptx"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ir/sym"
	"github.com/gcomp/gcomp/passes"
)

// Options select the target and the passes' behaviour.
type Options struct {
	Target ptx.Target     // zero value: sm_80, exact f32
	Passes passes.Options // Passes.TF32 and Passes.SM are set from Target
	// Producer writes the PTX (codegen/backend: ptx or nvvm); nil is codegen/ptx's emitter.
	Producer backend.Producer
	// AMP is autocast at inference (torch.autocast): ir.BF16 or ir.F16 run the f32 contractions in
	// that dtype with f32 accumulation (passes.Autocast); ir.Invalid, the zero value, none. The
	// plan's source graph is the autocast graph, so the reference interpreter runs what the
	// kernels compute, and the plan records the dtype.
	AMP ir.DType
	// NVRTCLib is the NVRTC library that compiles custom ops' CUDA C (--nvrtc-lib); empty:
	// searched for (codegen/nvrtc.Candidates).
	NVRTCLib string
	// Specialize, for a graph with dims, splits each named dim's range after the given upper
	// bounds (batch: [4] makes batch in [lo,4] and [5,hi]) and compiles the program once per
	// range (symspec.go). nil: one build for the whole range.
	Specialize map[string][]int
	// SpecializeAuto splits a dim at half its bound where the cost model finds the build there
	// at least 5% faster than the bound's (symspec.go).
	SpecializeAuto bool
}

// Result is a compiled model with what the passes computed on the way.
type Result struct {
	Artifact *artifact.Artifact
	Passes   *passes.Result
	// Variants are the specializations' graphs (their dims' bounds lowered) and passes, in the
	// order of the plan's variants (symspec.go); nil without.
	Variants []Variant
}

// Compile compiles g. With opt.Specialize, a graph with dims is compiled once more for each
// smaller range the splits make, and the plan carries those variants (symspec.go).
func Compile(g *ir.Graph, opt Options) (*Result, error) {
	if opt.Target.SM == 0 {
		opt.Target.SM = 80
	}
	opt.Passes.TF32 = opt.Target.TF32
	opt.Passes.SM = opt.Target.SM
	if opt.AMP != ir.Invalid && opt.AMP != ir.BF16 && opt.AMP != ir.F16 {
		return nil, fmt.Errorf("autocast to %s: want bf16 or f16", opt.AMP)
	}
	if opt.Producer == nil {
		opt.Producer = backend.PTX{}
	}
	if opt.Specialize != nil || opt.SpecializeAuto {
		return compileVariants(g, opt)
	}
	l, err := lower(g, opt)
	if err != nil {
		return nil, err
	}
	return compileLowered(opt, l)
}

// lowered is a graph through the passes, with its kernels ready for a producer.
type lowered struct {
	g       *ir.Graph // autocast, locations relative
	source  string    // g's text before the passes
	res     *passes.Result
	syms    map[string]symKernel
	customs []customKernel
	kernels []ptx.Kernel // the kernel graph's, but the custom ones
}

// lower runs the passes over g and prepares its kernels.
func lower(g *ir.Graph, opt Options) (*lowered, error) {
	opt.Passes.AMP = ir.Invalid // applied here, before the source is recorded
	g = relativeLocs(passes.AutocastGraph(g, opt.AMP))
	l := &lowered{g: g, source: g.String()} // before the passes, which work on a copy, see anything
	var err error
	if l.res, err = passes.Run(g, opt.Passes); err != nil {
		return nil, err
	}
	kg := l.res.Kernels
	if l.syms, err = symbolicKernels(g, kg, opt.Producer); err != nil {
		return nil, err
	}
	if l.customs, err = buildCustom(kg, opt.Target.SM, opt.NVRTCLib); err != nil {
		return nil, err
	}
	for _, k := range kg.Kernels {
		if k.Kind == passes.Custom {
			continue
		}
		body := k.Body
		sk, symbolic := l.syms[k.Name]
		if symbolic {
			body = atBound(body)
		}
		pk := ptx.Kernel{Name: k.Name, Graph: body, Shared: k.SharedOffsets(), SharedBytes: int(k.SharedBytes), InPlace: k.InPlace, Symbolic: symbolic, Rows: sk.bound,
			ParamInputs: paramInputs(kg, body), Sizes: onClone(sk.sizes, k.Body, body)}
		pk.Stages = stageKernels(k, sk.stages)
		l.kernels = append(l.kernels, pk)
	}
	return l, nil
}

// module writes one module holding kernels and the custom kernels, and returns it with each
// kernel's launch and each custom kernel's entry.
func module(opt Options, kernels []ptx.Kernel, customs []customKernel) (string, []ptx.Launch, []string, error) {
	text, launches, err := opt.Producer.Module(kernels, opt.Target)
	if err != nil {
		return "", nil, nil, err
	}
	units := make([]*custom.Unit, len(customs))
	for i, ck := range customs {
		units[i] = ck.unit
	}
	text, entries, err := custom.Merge(text, units)
	if err != nil {
		return "", nil, nil, err
	}
	return text, launches, entries, nil
}

// plan is l's launch plan, given the launches of its kernels (l.kernels) and the entries of its
// custom kernels (l.customs) in the module.
func (l *lowered) plan(opt Options, genLaunches []ptx.Launch, entries []string) (*artifact.Plan, error) {
	g, kg, res, syms, customs := l.g, l.res.Kernels, l.res, l.syms, l.customs
	launches := make([]ptx.Launch, len(kg.Kernels)) // the custom kernels' stay zero
	for i, j := 0, 0; i < len(kg.Kernels); i++ {
		if kg.Kernels[i].Kind != passes.Custom {
			launches[i], j = genLaunches[j], j+1
		}
	}
	plan := &artifact.Plan{
		Format:     artifact.Format,
		Version:    artifact.Version,
		Model:      g.Name,
		Target:     fmt.Sprintf("sm_%d", opt.Target.SM),
		TF32:       opt.Target.TF32,
		AMP:        ampName(opt.AMP),
		MemoryPlan: *res.Plan,
		Graph:      l.source,
	}
	planDims(plan, g, kg)
	for _, o := range g.Outputs {
		plan.OutputNames = append(plan.OutputNames, o.Name)
	}
	offsets := map[string]int64{}
	for _, b := range res.Plan.Buffers {
		offsets[b.Name] = b.Offset
	}
	nextCustom := 0
	for i, k := range kg.Kernels {
		if k.Kind == passes.Custom {
			pk, err := customLaunch(kg, offsets, customs[nextCustom], entries[nextCustom])
			if err != nil {
				return nil, err
			}
			nextCustom++
			plan.Kernels = append(plan.Kernels, pk)
			continue
		}
		l := launches[i]
		pk := artifact.Kernel{Name: k.Name, Entry: l.Entry, Grid: l.Grid, Block: l.Block, SharedBytes: l.SharedBytes, Ops: opNames(k.Ops), Notes: l.Notes,
			Producer: l.Producer, BindTime: k.BindTime, PDL: l.PDL}
		var scratch int64
		var size string
		if l.Work != nil {
			size = sym.Scale(syms[k.Name].rows, int64(l.Work.Scale)).String()
			if l.Work.Elements != "" {
				size = l.Work.Elements // symattn.go
			}
			pk.Work = &artifact.Work{Elements: size, Vector: l.Work.Vector, MaxBlocks: l.Work.MaxBlocks, Tile: l.Work.Tile, Axis: l.Work.Axis}
			if syms[k.Name].boundGrid {
				pk.Work = nil // the size argument stays: it bounds the k loop
			}
		}
		for _, a := range l.Params {
			if a.Kind == ptx.ArgSize {
				pk.Args = append(pk.Args, artifact.Arg{Kind: artifact.ArgSize, Expr: cmp.Or(a.Expr, syms[k.Name].sizeExpr(size, a))})
				continue
			}
			if a.Kind == ptx.ArgError {
				// Each launch gets a word of its own (indexcheck.go).
				pk.Args = append(pk.Args, artifact.Arg{Kind: artifact.ArgError, Offset: plan.ErrorBytes})
				plan.ErrorBytes += artifact.ErrorWordBytes
				pk.IndexChecks = indexChecks(k, l.Checks)
				continue
			}
			arg, err := bind(kg, offsets, a, &scratch)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", k.Name, err)
			}
			pk.Args = append(pk.Args, arg)
		}
		// Kernels run one after another, so they share one scratch area.
		plan.ScratchBytes = max(plan.ScratchBytes, scratch)
		plan.Kernels = append(plan.Kernels, pk)
	}
	if err := plan.Validate(); err != nil {
		return nil, fmt.Errorf("internal error: the launch plan is inconsistent: %v", err)
	}
	return plan, nil
}

// bind resolves one kernel parameter to the model buffer of that name, or a
// slice of the scratch area (scratch advances past it).
func bind(kg *passes.KernelGraph, offsets map[string]int64, a ptx.Arg, scratch *int64) (artifact.Arg, error) {
	if a.Kind == ptx.ArgScratch {
		arg := artifact.Arg{Kind: artifact.ArgScratch, Offset: *scratch, Bytes: int64(a.Bytes)}
		*scratch += alignUp(int64(a.Bytes))
		return arg, nil
	}
	b := kg.Buffer(a.Name)
	if b == nil {
		return artifact.Arg{}, fmt.Errorf("parameter %s names no buffer", a.Name)
	}
	switch b.Kind {
	case passes.InputBuffer:
		return artifact.Arg{Kind: artifact.ArgInput, Name: b.Name}, nil
	case passes.ParamBuffer:
		return artifact.Arg{Kind: artifact.ArgParam, Name: b.Name}, nil
	case passes.OutputBuffer:
		return artifact.Arg{Kind: artifact.ArgOutput, Name: b.Name}, nil
	}
	off, ok := offsets[b.Name]
	if !ok {
		return artifact.Arg{}, fmt.Errorf("intermediate %s has no place in the memory plan", b.Name)
	}
	return artifact.Arg{Kind: artifact.ArgArena, Name: b.Name, Offset: off}, nil
}

// paramInputs names the inputs of a kernel's body that are the model's parameters (no kernel of
// a run writes them; codegen/ptx's PDL entries may load them before waiting), or nil for none.
func paramInputs(kg *passes.KernelGraph, body *ir.Graph) map[string]bool {
	var ps map[string]bool
	for _, v := range body.Inputs() {
		if b := kg.Buffer(v.Name); b != nil && b.Kind == passes.ParamBuffer {
			if ps == nil {
				ps = map[string]bool{}
			}
			ps[v.Name] = true
		}
	}
	return ps
}

func alignUp(n int64) int64 { return (n + passes.Alignment - 1) / passes.Alignment * passes.Alignment }

func opNames(vs []*ir.Value) string {
	names := make([]string, len(vs))
	for i, v := range vs {
		names[i] = v.Op
	}
	return strings.Join(names, " ")
}

// relativeLocs returns g, or a copy of it whose source locations ("/home/me/gcomp/model.go:17")
// name the model file relative to its own directory ("model.go:17"), so the artifact's bytes do
// not depend on where the model was checked out or from which directory gcomp ran. A graph
// comes from one model file, so its base name is that relative path.
func relativeLocs(g *ir.Graph) *ir.Graph {
	var c *ir.Graph
	for i, v := range g.Values {
		if rel := relativeLoc(v.Pos); rel != v.Pos {
			if c == nil {
				c = g.Clone()
			}
			c.Values[i].Pos = rel
		}
	}
	if c == nil {
		return g
	}
	return c
}

// relativeLoc turns "dir/file:line" into "file:line" (either separator, so a plan written on
// Windows reads the same).
func relativeLoc(pos string) string {
	if i := strings.LastIndexAny(pos, `/\`); i >= 0 {
		return pos[i+1:]
	}
	return pos
}

// ampName is the plan's spelling of an autocast dtype ("" for none).
func ampName(dt ir.DType) string {
	if dt == ir.Invalid {
		return ""
	}
	return dt.String()
}
