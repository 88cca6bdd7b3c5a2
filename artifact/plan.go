package artifact

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensorio"
)

// Format and Version identify a launch plan; a runtime refuses other versions. Version 4 added
// the symbolic dims (dims.go: Plan.Dims, IOBuffer.Sym, Arg "size", Kernel.Work); a plan without
// dims is written as version 3, which it is, so its bytes are unchanged. Version 3 added
// IOBuffer.InPlaceOf (an output that is a donated input's buffer); version 2 added Kernel.Entry
// (a module holds each distinct kernel once); version 2 plans, and version 1 plans, whose
// launches each ran the entry of their own name, are still read.
const (
	Format  = "gcomp-launch-plan"
	Version = 4
	// StaticVersion is the version of a plan without dims.
	StaticVersion = 3
)

// Plan is the launch plan of a compiled model.
type Plan struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
	Model   string `json:"model"`
	Target  string `json:"target"` // "sm_80"
	TF32    bool   `json:"tf32"`
	// AMP is the autocast dtype the model was compiled with ("bf16", "f16"; empty: none).
	AMP string `json:"amp,omitempty"`
	// PTX names the module file (relative to the plan's directory) and its SHA-256, so a
	// plan is never run against a module it was not made for.
	PTX       string `json:"ptx"`
	PTXSHA256 string `json:"ptx_sha256"`
	// Cubins are the module precompiled for some architectures (gcomp build --cubin), beside it.
	Cubins []Cubin `json:"cubins,omitempty"`
	// The memory plan: arena_bytes, buffers (with offsets and live ranges), inputs,
	// params and outputs.
	MemoryPlan
	// OutputNames are the model's names of its outputs, one per entry of Outputs (whose
	// names are the buffers' names, which differ where the passes renamed a buffer).
	OutputNames []string `json:"output_names"`
	// SourceNames are the names the model file gives its inputs and outputs where the graph
	// could not keep them (an .onnx model's "onnx::Gemm_0" for the graph's onnx__Gemm_0), so a
	// built module is named as its source is; absent for models whose names are the graph's.
	SourceNames *SourceNames `json:"source_names,omitempty"`
	// Dims are the graph's symbolic dims with their ranges (version 4; dims.go): the plan is
	// laid out at their upper bounds and runs at any sizes in range.
	Dims []Dim `json:"dims,omitempty"`
	// Ranges (version 5, with Variants; variants.go) are the sizes the plan's own kernels run;
	// each variant runs its own.
	OwnRanges []Dim `json:"ranges,omitempty"`
	// ScratchBytes is the size of the zeroed scratch area kernels use for cross-block
	// reductions; every kernel leaves it zero again.
	ScratchBytes int64 `json:"scratch_bytes"`
	// ErrorBytes is the size of the zeroed error area: one error word (indexcheck.go) for
	// each launch whose kernel checks gather indices.
	ErrorBytes int64    `json:"error_bytes,omitempty"`
	Kernels    []Kernel `json:"kernels"`
	// Variants are the program's specializations for smaller sizes (version 5; variants.go).
	Variants []Variant `json:"variants,omitempty"`
	// Graph is the source model in the .gir text form.
	Graph string `json:"graph"`
}

// SourceNames pair a model file's names with the graph's, [file's, graph's], one pair per input
// (Inputs) and per output (Outputs, by OutputNames).
type SourceNames struct {
	Inputs  [][2]string `json:"inputs"`
	Outputs [][2]string `json:"outputs"`
}

// Kernel is one launch.
type Kernel struct {
	Name string `json:"name"`
	// Entry is the module's .entry the launch runs. Launches whose kernels have the same code
	// share one entry, named after the first of them, each with its own Args.
	Entry       string `json:"entry"`
	Grid        [3]int `json:"grid"`
	Block       [3]int `json:"block"`
	SharedBytes int    `json:"shared_bytes"`
	Args        []Arg  `json:"args"`
	Ops         string `json:"ops"` // the graph ops fused into the kernel, for people reading the plan
	// Notes say how the kernel departs from what the flags asked for, e.g. "tf32 fallback to
	// FFMA: an operand has no contiguous dim"; `gcomp build` and `gcomp check` print them.
	Notes []string `json:"notes,omitempty"`
	// Producer names the code generator that wrote the entry ("ptx" or "nvvm") when the build
	// chose one per kernel (--backend auto); empty when one producer wrote the whole module.
	Producer string `json:"producer,omitempty"`
	// BindTime kernels read parameters only: the runtime runs them before the first run after
	// weights are bound or change, not on every run. They come before the kernels that read
	// their outputs, which no kernel overwrites.
	BindTime bool `json:"bind_time,omitempty"`
	// PDL (sm_90 plans only) says the entry keeps the programmatic dependent launch contract
	// (codegen/ptx pdl.go): it reads nothing another kernel writes before griddepcontrol.wait, so
	// the runtime may launch it while the kernel before it still runs.
	PDL bool `json:"pdl,omitempty"`
	// IndexChecks describe the gathers that record a bad index in the kernel's error word.
	IndexChecks []IndexCheck `json:"index_checks,omitempty"`
	// Work, for a kernel whose element count is known only at run time (version 4), says how
	// its grid follows from the sizes (dims.go); Grid is then the grid at the bound.
	Work *Work `json:"work,omitempty"`
}

// ArgKind values: which buffer a kernel parameter points into.
const (
	ArgInput   = "input"   // the model input Name
	ArgParam   = "param"   // the parameter Name
	ArgOutput  = "output"  // the model output Name
	ArgArena   = "arena"   // the arena at Offset (the intermediate Name)
	ArgScratch = "scratch" // the scratch area at Offset, Bytes long
	ArgScalar  = "scalar"  // a custom kernel's scalar argument: Value as Type (scalar.go)
	ArgError   = "error"   // the launch's error word at Offset of the error area (indexcheck.go)
	ArgSize    = "size"    // a .u32: the expression Expr over the dims at the run's sizes (dims.go)
)

// Arg binds one .param of a kernel entry, in declaration order. Each is a
// 64-bit device address.
type Arg struct {
	Kind   string `json:"kind"`
	Name   string `json:"name,omitempty"`
	Offset int64  `json:"offset,omitempty"`
	Bytes  int64  `json:"bytes,omitempty"`
	// Scalars (ArgScalar) only: the dtype (i32, i64, f32, f64) and the value.
	Type  string  `json:"type,omitempty"`
	Value float64 `json:"value,omitempty"`
	// Expr (ArgSize only) is the size in the .gir expression syntax, e.g. "3*batch".
	Expr string `json:"expr,omitempty"`
}

// Artifact is a compiled model: the PTX module and its plan, and the module precompiled for
// some GPU architectures (by architecture, "sm_80"), if any.
type Artifact struct {
	PTX    []byte
	Plan   *Plan
	Cubins map[string][]byte
}

// Notes lists every kernel's notes as "kernel: note", in launch order: what `gcomp check` prints
// under its kernel table and `gcomp build --stats` should print under the cost report.
func (p *Plan) Notes() []string {
	var notes []string
	for _, k := range p.Kernels {
		for _, n := range k.Notes {
			notes = append(notes, k.Name+": "+n)
		}
	}
	return notes
}

// PlanPath is where the plan of a module file lives: model.ptx → model.plan.json.
func PlanPath(ptxPath string) string {
	return strings.TrimSuffix(ptxPath, filepath.Ext(ptxPath)) + ".plan.json"
}

// JSON is the plan as indented JSON with a trailing newline.
func (p *Plan) JSON() []byte { return indentedJSON(p) }

// SourceGraph parses the plan's source graph.
func (p *Plan) SourceGraph() (*ir.Graph, error) {
	g, err := ir.Parse(p.Model+".gir", []byte(p.Graph))
	if err != nil {
		return nil, fmt.Errorf("launch plan: source graph: %v", err)
	}
	return g, nil
}

// Write writes the module to ptxPath and its plan beside it (the plan records the module's file
// name and hash), together: both are replaced atomically, or neither when either cannot be.
func (a *Artifact) Write(ptxPath string) error {
	a.Plan.PTX = filepath.Base(ptxPath)
	a.Plan.PTXSHA256 = hash(a.PTX)
	cubins, err := a.cubinWrites(ptxPath)
	if err != nil {
		return err
	}
	// The module, its cubins and the plan are published together, or none of them.
	return tensorio.WriteFilesAtomic(append(cubins,
		tensorio.FileWrite{Path: ptxPath, Write: func(w io.Writer) error {
			_, err := w.Write(a.PTX)
			return err
		}},
		tensorio.FileWrite{Path: PlanPath(ptxPath), Write: func(w io.Writer) error {
			_, err := w.Write(a.Plan.JSON())
			return err
		}})...)
}

// Read loads a module file and the plan beside it, checking that they belong
// together.
func Read(ptxPath string) (*Artifact, error) {
	text, err := tensorio.ReadFile(ptxPath, maxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("cannot read module: %v", err)
	}
	planPath := PlanPath(ptxPath)
	data, err := tensorio.ReadFile(planPath, maxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("%s has no launch plan beside it (%s): %v", ptxPath, filepath.Base(planPath), strings.TrimPrefix(err.Error(), planPath+": "))
	}
	p, err := ParsePlan(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", planPath, err)
	}
	if p.PTXSHA256 != hash(text) {
		return nil, fmt.Errorf("%s was not made for %s: the module's SHA-256 differs (rebuild both with gcomp build)", planPath, ptxPath)
	}
	cubins, err := readCubins(ptxPath, p)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", planPath, err)
	}
	return &Artifact{PTX: text, Plan: p, Cubins: cubins}, nil
}

// ParsePlan decodes and validates a launch plan.
func ParsePlan(data []byte) (*Plan, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var p Plan
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("not a launch plan: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("not a launch plan: data after the JSON object")
	}
	if p.Format != Format {
		return nil, fmt.Errorf("not a launch plan (format %q, want %q)", p.Format, Format)
	}
	switch p.Version {
	case VariantsVersion, Version, StaticVersion, 2:
	case 1: // every launch ran the entry of its own name
		for i := range p.Kernels {
			p.Kernels[i].Entry = p.Kernels[i].Name
		}
	default:
		return nil, fmt.Errorf("launch plan version %d; this gcomp reads versions 1 to %d (rebuild the model)", p.Version, VariantsVersion)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

// Validate checks the plan's internal consistency: every argument names a
// buffer the plan declares and stays inside its region.
func (p *Plan) Validate() error {
	if p.AMP != "" && p.AMP != "bf16" && p.AMP != "f16" {
		return fmt.Errorf("amp %q: want bf16, f16 or none", p.AMP)
	}
	if err := p.validateNames(); err != nil {
		return err
	}
	if err := p.validateSizes(); err != nil {
		return err
	}
	if err := p.validateAliases(); err != nil {
		return err
	}
	if err := p.validateDims(); err != nil {
		return err
	}
	if err := p.validateVariants(); err != nil {
		return err
	}
	if len(p.Variants) > 0 {
		if _, err := p.VariantPlans(); err != nil {
			return err
		}
	}
	names := map[string]map[string]int64{ArgInput: {}, ArgParam: {}, ArgOutput: {}, ArgArena: {}}
	for _, set := range []struct {
		kind string
		bufs []IOBuffer
	}{{ArgInput, p.Inputs}, {ArgParam, p.Params}, {ArgOutput, p.Outputs}} {
		for _, b := range set.bufs {
			t, err := ir.ParseType(b.Type)
			if err != nil {
				return fmt.Errorf("%s %s: bad type %q: %v", set.kind, b.Name, b.Type, err)
			}
			if int64(t.Bytes()) != b.Size {
				return fmt.Errorf("%s %s: size %d does not match its type %s", set.kind, b.Name, b.Size, b.Type)
			}
			names[set.kind][b.Name] = b.Size
		}
	}
	for _, b := range p.Buffers {
		if b.Offset < 0 || b.Size < 0 || b.Offset > p.ArenaBytes || b.Size > p.ArenaBytes-b.Offset {
			return fmt.Errorf("arena buffer %s [%d, %d) lies outside the %d-byte arena", b.Name, b.Offset, b.Offset+b.Size, p.ArenaBytes)
		}
		names[ArgArena][b.Name] = b.Size
	}
	if len(p.OutputNames) != len(p.Outputs) {
		return fmt.Errorf("%d output names for %d outputs", len(p.OutputNames), len(p.Outputs))
	}
	if len(p.Kernels) == 0 {
		return fmt.Errorf("the plan has no kernels")
	}
	for _, k := range p.Kernels {
		if k.Entry == "" {
			return fmt.Errorf("kernel %s names no entry", k.Name)
		}
		for d := range 3 {
			if k.Grid[d] <= 0 || k.Block[d] <= 0 {
				return fmt.Errorf("kernel %s: grid %v and block %v must be positive", k.Name, k.Grid, k.Block)
			}
		}
		for i, a := range k.Args {
			switch a.Kind {
			case ArgInput, ArgParam, ArgOutput:
				if _, ok := names[a.Kind][a.Name]; !ok {
					return fmt.Errorf("kernel %s argument %d: no %s named %q", k.Name, i, a.Kind, a.Name)
				}
			case ArgArena:
				size, ok := names[ArgArena][a.Name]
				if !ok || a.Offset < 0 || a.Offset > p.ArenaBytes-size {
					return fmt.Errorf("kernel %s argument %d: arena buffer %q at %d is not in the plan", k.Name, i, a.Name, a.Offset)
				}
			case ArgScratch:
				if a.Offset < 0 || a.Bytes <= 0 || a.Offset > p.ScratchBytes || a.Bytes > p.ScratchBytes-a.Offset {
					return fmt.Errorf("kernel %s argument %d: scratch [%d, %d) lies outside the %d-byte scratch area", k.Name, i, a.Offset, a.Offset+a.Bytes, p.ScratchBytes)
				}
			case ArgScalar:
				if _, err := a.ScalarBits(); err != nil {
					return fmt.Errorf("kernel %s argument %d: %v", k.Name, i, err)
				}
			case ArgError: // validateChecks
			case ArgSize: // validateDims
			default:
				return fmt.Errorf("kernel %s argument %d: unknown kind %q", k.Name, i, a.Kind)
			}
		}
		if k.PDL && !pdlTarget(p.Target) {
			return fmt.Errorf("kernel %s: a programmatic dependent launch needs sm_90 or later, the plan's target is %s", k.Name, p.Target)
		}
		if err := p.validateChecks(k); err != nil {
			return err
		}
	}
	return nil
}

// pdlTarget reports whether a plan's target ("sm_90") has griddepcontrol.
func pdlTarget(target string) bool {
	sm, err := strconv.Atoi(strings.TrimPrefix(target, "sm_"))
	return err == nil && strings.HasPrefix(target, "sm_") && sm >= 90
}

func hash(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
