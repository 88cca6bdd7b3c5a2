package nvvm

import (
	"fmt"
	"slices"

	"github.com/llir/llvm/ir"
	"github.com/llir/llvm/ir/constant"
	"github.com/llir/llvm/ir/metadata"
	"github.com/llir/llvm/ir/types"

	"github.com/gcomp/gcomp/codegen/plan"
	irg "github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// DataLayout is the 64-bit NVPTX layout libNVVM requires, i128 spelled out.
const DataLayout = "e-p:64:64:64-i1:8:8-i8:8:8-i16:16:16-i32:32:32-i64:64:64-i128:128:128-f32:32:32-f64:64:64-v16:16:16-v32:32:32-v64:64:64-v128:128:128-n16:32:64"

// Triple is the NVPTX target triple of every module.
const Triple = "nvptx64-nvidia-cuda"

// irVersion is the !nvvmir.version the module declares: NVVM IR 1.8, read by CUDA 11.8's
// libNVVM (and by later ones).
var irVersion = [2]int64{1, 8}

// IR lowers kernels into one NVVM IR module, in order, each distinct kernel once (classes), and
// returns its text with each kernel's launch. Kernels a template of this package does not cover are an error naming the kernel and
// the template.
func IR(kernels []plan.Kernel, t plan.Target) (string, []plan.Launch, error) {
	uniq, of, _, err := classes(kernels)
	if err != nil {
		return "", nil, err
	}
	m, launches, err := build(uniq, t)
	if err != nil {
		return "", nil, err
	}
	return m.m.String(), expand(kernels, uniq, of, launches), nil
}

func build(kernels []plan.Kernel, t plan.Target) (*module, []plan.Launch, error) {
	switch t.SM {
	case 80, 86, 89, 90:
	default:
		return nil, nil, fmt.Errorf("target sm_%d is not supported (want 80, 86, 89 or 90)", t.SM)
	}
	m := ir.NewModule()
	m.SourceFilename = "gcomp"
	m.DataLayout = DataLayout
	m.TargetTriple = Triple
	md := &module{m: m, decls: map[string]*ir.Func{}, globals: map[string]*ir.Global{}}
	var annotations []metadata.Node
	var launches []plan.Launch
	for _, k := range kernels {
		if err := refuseFP8(k, t); err != nil {
			return nil, nil, err
		}
		f, l, err := md.kernel(k, t)
		if err != nil {
			return nil, nil, err
		}
		if slices.ContainsFunc(l.Params, func(a plan.Arg) bool { return a.Kind == plan.ArgError }) {
			l.Checks = plan.IndexChecks(k) // as codegen/ptx's launch describes them
		}
		annotations = append(annotations, md.tuple(f, &metadata.String{Value: "kernel"}, md.i32(1)))
		annotations = append(annotations, md.ann...) // the template's launch bounds
		md.ann = nil
		launches = append(launches, l)
	}
	m.NamedMetadataDefs["nvvm.annotations"] = &metadata.NamedDef{Name: "nvvm.annotations", Nodes: annotations}
	m.NamedMetadataDefs["nvvmir.version"] = &metadata.NamedDef{Name: "nvvmir.version",
		Nodes: []metadata.Node{md.tuple(md.i32(irVersion[0]), md.i32(irVersion[1]))}}
	return md, launches, nil
}

// module is the module being built: intrinsic and libdevice declarations are made once.
type module struct {
	m       *ir.Module
	decls   map[string]*ir.Func
	globals map[string]*ir.Global
	nmd     int64
	// ann are annotations the kernel being built adds (maxntidx, minctasm).
	ann []metadata.Node
	// libdevice is set when a kernel calls a libdevice function (__nv_*): libNVVM must link
	// libdevice.10.bc with the module.
	libdevice bool
}

// tuple adds a metadata node !{fields...} to the module.
func (md *module) tuple(fields ...any) *metadata.Tuple {
	t := &metadata.Tuple{MetadataID: metadata.MetadataID(md.nmd)}
	md.nmd++
	for _, f := range fields {
		switch f := f.(type) {
		case metadata.Field:
			t.Fields = append(t.Fields, f)
		case constant.Constant:
			t.Fields = append(t.Fields, &metadata.Value{Value: f})
		}
	}
	md.m.MetadataDefs = append(md.m.MetadataDefs, t)
	return t
}

func (md *module) i32(n int64) constant.Constant { return constant.NewInt(types.I32, n) }

// declare returns the function name with the given signature, declaring it on first use.
func (md *module) declare(name string, ret types.Type, params ...types.Type) *ir.Func {
	if f, ok := md.decls[name]; ok {
		return f
	}
	var ps []*ir.Param
	for i, p := range params {
		// named: libNVVM 11.8's parser takes no numbered parameters in a declaration
		ps = append(ps, ir.NewParam(fmt.Sprintf("a%d", i), p))
	}
	f := md.m.NewFunc(name, ret, ps...)
	md.decls[name] = f
	return f
}

// kernel checks k and lowers it with its template.
func (md *module) kernel(k plan.Kernel, t plan.Target) (*ir.Func, plan.Launch, error) {
	g := k.Graph
	if err := ops.Verify(g); err != nil {
		return nil, plan.Launch{}, fmt.Errorf("%s: %w", k.Name, err)
	}
	if len(g.Outputs) == 0 {
		return nil, plan.Launch{}, fmt.Errorf("%s: the kernel has no outputs", k.Name)
	}
	for _, v := range g.Values {
		if n := v.Type.Shape.NumElements(); n >= 1<<31 {
			return nil, plan.Launch{}, fmt.Errorf("%s: %s has %d elements; 32-bit indexing needs fewer than 2^31", k.Name, g.Format(v), n)
		}
	}
	tpl := plan.Template(k)
	var (
		f   *ir.Func
		l   plan.Launch
		err error
	)
	if k.Symbolic && len(k.Stages) == 0 { // a persistent kernel's stages say which are (sympersist.go)
		tpl = "symbolic" // symloop.go picks its template, as codegen/ptx does
	}
	switch tpl {
	case "symbolic":
		f, l, err = md.symbolicKernel(k, t)
	case "persistent":
		f, l, err = md.persistentKernel(k)
	case "loop":
		f, l, err = md.loopKernel(k)
	case "transpose tile":
		f, l, err = md.transposeKernel(k)
	case "staged loop":
		f, l, err = md.stagedKernel(k, plan.StagedPlan(k))
	case "reduction":
		var rp plan.Reduction
		if rp, err = plan.ReducePlan(k); err == nil {
			switch rp.Kind {
			case "row":
				f, l, err = md.rowReduce(k, rp)
			case "column":
				f, l, err = md.colReduce(k, rp)
			case "split":
				f, l, err = md.splitReduce(k, rp)
			default:
				return nil, plan.Launch{}, fmt.Errorf("%s: the %s reduction template has no NVVM counterpart yet (build with --backend ptx)", k.Name, rp.Kind)
			}
		}
	case "contraction":
		var c plan.Contraction
		if c, err = plan.ContractionPlan(k, t); err == nil {
			switch c.Kind {
			case "direct":
				f, l, err = md.directKernel(k, c)
			case "gemv":
				// No NVVM counterpart: the direct template computes it (exactly, more slowly);
				// --backend auto takes codegen/ptx's GEMV for it.
				f, l, err = md.directKernel(k, plan.DirectFallback(c))
			case "ffma":
				f, l, err = md.ffmaKernel(k, t)
			case "tensor core":
				f, l, err = md.mmaKernel(k, t)
			default:
				return nil, plan.Launch{}, fmt.Errorf("%s: the %s contraction template has no NVVM counterpart yet (build with --backend ptx)", k.Name, c.Kind)
			}
		}
	case "attention":
		f, l, err = md.attentionKernel(k, t)
	case "attention backward":
		f, l, err = md.attentionBwdKernel(k, t)
	case "update":
		f, l, err = md.updateKernel(k)
	case "norm gemv":
		f, l, err = md.normGEMVKernel(k)
	case "":
		// The PTX emitter's message says why no template takes the kernel.
		if _, _, err = plan.Generate(k, plan.Target{SM: 80}); err == nil {
			err = fmt.Errorf("no template takes this kernel")
		} else {
			return nil, plan.Launch{}, err
		}
	default:
		return nil, plan.Launch{}, fmt.Errorf("%s: the %s template has no NVVM counterpart yet (build with --backend ptx)", k.Name, tpl)
	}
	if err != nil {
		return nil, plan.Launch{}, fmt.Errorf("%s: %w", k.Name, err)
	}
	return f, l, nil
}

// memType is the LLVM type of one element of dtype d in memory; regType the type it computes
// in: every float narrower than f64 in float (f16 and bf16 values rounded back after each op,
// as in codegen/ptx), integers at their width, bool in i1.
func memType(d irg.DType) types.Type {
	switch d {
	case irg.F32:
		return types.Float
	case irg.F64:
		return types.Double
	case irg.F16:
		return types.Half
	case irg.BF16:
		return types.I16
	case irg.I32:
		return types.I32
	case irg.I64:
		return types.I64
	}
	return types.I8 // i8, u8, bool
}

func regType(d irg.DType) types.Type {
	switch d {
	case irg.F16, irg.BF16:
		return types.Float
	case irg.Bool:
		return types.I1
	}
	return memType(d)
}
