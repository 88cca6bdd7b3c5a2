package passes

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
)

// State is what the passes transform: the graph, then the kernel graph fusion builds from it,
// then the memory plan and the cost report. Each pass reads and replaces some of its fields.
type State struct {
	Graph   *ir.Graph
	Kernels *KernelGraph // set by fuse (or built eagerly when fuse is disabled)
	Plan    *Plan        // set by memplan
	Stats   *Stats       // set by cost
	opt     Options
}

// A pass is one row of the pipeline table.
type pass struct {
	name     string
	fn       func(*State) error
	required bool   // cannot be disabled
	stage    string // what the pass produces or rewrites: "graph", "kernels", "plan" or "stats"
	doc      string
}

// passes is the pipeline, in the order it runs. passOrder below states why the order matters;
// init checks it.
var passes = [...]pass{
	{name: "attention-grad", fn: graphPass(lowerAttentionGrad), required: true, stage: "graph", doc: "gives attention's gradients (attention_grad) the rows' log-sum-exp for the fused backward's kernels, or writes them as their decomposition where those do not apply"},
	{name: "dce", fn: graphPass(deadCode), stage: "graph", doc: "removes values no output needs"},
	{name: "fold", fn: graphPass(foldConstants), stage: "graph", doc: "evaluates ops whose operands are constants (size-limited)"},
	{name: "simplify", fn: graphPass(simplify), stage: "graph", doc: "exact algebraic identities: x*1, -(-x), transpose∘transpose, ..."},
	{name: "cse", fn: graphPass(commonSubexpressions), stage: "graph", doc: "merges values computing the same op on the same operands"},
	{name: "late-dce", fn: graphPass(deadCode), stage: "graph", doc: "removes what simplify and cse left unused"},
	{name: "fp8", fn: fp8Pass, required: true, stage: "graph", doc: "runs dot_general over fp8 operands as the f16 GEMM of their exact f16 casts, before sm_89 (from sm_89 they stay fp8: the fp8 GEMM)"},
	{name: "attention", fn: graphPass(findAttention), stage: "graph", doc: "replaces scaled dot-product attention's decomposition by one attention op, which never materializes the scores"},
	{name: "fuse", fn: fusePass, stage: "kernels", doc: "groups ops into kernels (docs/fusion.md); disabled: one kernel per op"},
	{name: "schedule", fn: schedulePass, stage: "kernels", doc: "orders kernels to lower peak live memory"},
	{name: "bindtime", fn: bindTimePass, stage: "kernels", doc: "marks kernels that read parameters only, which run when weights are bound instead of every run"},
	{name: "persist", fn: persistPass, stage: "kernels", doc: "runs chains of small kernels in one single-block kernel, passing values in shared memory"},
	{name: "normgemv", fn: normGEMVPass, stage: "kernels", doc: "computes a norm read only by a GEMV's lhs in the GEMV's blocks (a prologue); the norm's kernel disappears"},
	{name: "appendkv", fn: appendKVPass, stage: "kernels", doc: "lets a decoding step's split-KV attention write the step's K and V rows into its caches itself; the update kernels disappear"},
	{name: "memplan", fn: memplanPass, stage: "plan", required: true, doc: "places intermediates in one arena; refuses a value a kernel would compute of more than 2^31-1 elements"},
	{name: "cost", fn: costPass, stage: "stats", required: true, doc: "kernels, DRAM bytes, flops and a roofline time"},
}

// passOrder lists constraints on the order of passes: a runs before b, for the reason given.
var passOrder = [...]struct{ a, b, why string }{
	{"attention-grad", "cse", "the gradients of one attention recompute one softmax (one attention_lse), which cse merges"},
	{"fp8", "attention", "the matcher sees the f16 contractions fp8 ones become"},
	{"fp8", "fuse", "before sm_89 code generation has no fp8 contraction: fusion must see the f16 one"},
	{"fold", "simplify", "simplify recognizes the splat constants that folding produces (x * broadcast(1) → x)"},
	{"fold", "cse", "folding creates equal constants for cse to merge"},
	{"simplify", "cse", "simplification rewrites values into equal forms"},
	{"cse", "late-dce", "cse and simplify leave unused values behind"},
	{"late-dce", "fuse", "fusion materializes only what outputs need"},
	{"simplify", "attention", "the matcher sees the canonical forms (x·1 gone, transposes merged)"},
	{"attention", "fuse", "fusion gives each attention op a kernel of its own"},
	{"fuse", "schedule", "the schedule orders kernels"},
	{"persist", "normgemv", "a GEMV with a norm prologue cannot be a persistent stage: persistence, which saves more, chooses first"},
	{"normgemv", "memplan", "liveness is computed over the merged kernels"},
	{"bindtime", "appendkv", "bind-time kernels are never merged into an attention kernel"},
	{"appendkv", "memplan", "the caches' donations and in-place writes are decided over the merged kernels"},
	{"schedule", "persist", "runs are consecutive kernels of the final order"},
	{"persist", "memplan", "values a persistent kernel keeps in shared memory need no place in the arena"},
	{"schedule", "memplan", "liveness is computed over the kernel order"},
	{"schedule", "bindtime", "bindtime moves the kernels it marks to the front of the final order"},
	{"bindtime", "persist", "parameter-only kernels run at bind: persist leaves them out of the per-run kernels it merges"},
	{"bindtime", "memplan", "the outputs of bind-time kernels stay live across runs"},
	{"memplan", "cost", "the cost report includes the arena size"},
}

func init() {
	if err := checkOrder(); err != nil {
		panic(err)
	}
}

// checkOrder verifies that the table satisfies passOrder and that names are unique.
func checkOrder() error {
	index := map[string]int{}
	for i, p := range passes {
		if _, dup := index[p.name]; dup {
			return fmt.Errorf("passes: pass %s listed twice", p.name)
		}
		index[p.name] = i
	}
	for _, c := range passOrder {
		ia, oka := index[c.a]
		ib, okb := index[c.b]
		switch {
		case !oka || !okb:
			return fmt.Errorf("passes: ordering constraint names an unknown pass: %s before %s", c.a, c.b)
		case ia >= ib:
			return fmt.Errorf("passes: %s must run before %s: %s", c.a, c.b, c.why)
		}
	}
	return nil
}

// PassInfo describes one pass for help texts.
type PassInfo struct {
	Name     string
	Doc      string
	Required bool
}

// Passes lists the pipeline in order.
func Passes() []PassInfo {
	var ps []PassInfo
	for _, p := range passes {
		ps = append(ps, PassInfo{p.name, p.doc, p.required})
	}
	return ps
}

// Options control a pipeline run. The zero value runs every pass without checks or output.
type Options struct {
	DisablePasses []string  // pass names to skip (required passes cannot be skipped)
	DumpAfter     string    // a pass name or "all": print the IR (or kernel graph, plan, stats) after it
	DumpTo        io.Writer // where dumps go; nil discards them
	VerifyEach    bool      // run the checker of the pass's stage after every pass
	Timings       io.Writer // if set, a table of per-pass times is written here at the end
	Fusion        FusionOptions
	TF32          bool // cost model: f32 contractions run on TF32 tensor cores
	// SM is the target's architecture (80, 86, 89, 90; 0 reads as 80): from 89 dot_generals
	// over fp8 operands stay fp8 for codegen's fp8 GEMM (mma.sync m16n8k32); before, the fp8
	// pass runs them as f16 GEMMs.
	SM int
	// AMP is autocast's low dtype (ir.BF16 or ir.F16): f32 contractions run in it before the
	// first pass (Autocast); ir.Invalid, the zero value, leaves the graph as it is.
	AMP ir.DType
	// ParamsChangeEveryRun says the parameters are replaced after every run (a train step), so
	// parameter-only kernels would run on every run anyway: the bindtime pass marks none, and
	// they stay in schedule order beside the kernels that read them (bindtime.go).
	ParamsChangeEveryRun bool
}

// Timing is the time one pass took.
type Timing struct {
	Pass     string
	Duration time.Duration
	Skipped  bool
}

// Result is the outcome of Run.
type Result struct {
	Graph   *ir.Graph    // the canonicalized graph
	Kernels *KernelGraph // fused kernels in schedule order
	Plan    *Plan        // memory plan
	Stats   *Stats       // cost report
	Timings []Timing
}

// Run runs the pipeline on a copy of g (g itself is not modified). The first failing pass stops
// the run; its error, and any panic inside it, names the pass.
func Run(g *ir.Graph, opt Options) (*Result, error) {
	if err := ops.Verify(g); err != nil {
		return nil, fmt.Errorf("input graph: %w", err)
	}
	disabled := map[string]bool{}
	for _, name := range opt.DisablePasses {
		p := find(name)
		if p == nil {
			return nil, fmt.Errorf("--disable-pass: unknown pass %q (passes: %s)", name, passNames())
		}
		if p.required {
			return nil, fmt.Errorf("--disable-pass: pass %s is required", name)
		}
		disabled[name] = true
	}
	if opt.DumpAfter != "" && opt.DumpAfter != "all" && find(opt.DumpAfter) == nil {
		return nil, fmt.Errorf("--dump-after: unknown pass %q (passes: %s, or all)", opt.DumpAfter, passNames())
	}
	if opt.AMP != ir.Invalid && opt.AMP != ir.BF16 && opt.AMP != ir.F16 {
		return nil, fmt.Errorf("autocast to %s: want bf16 or f16", opt.AMP)
	}
	st := &State{Graph: g.Clone(), opt: opt}
	if opt.AMP != ir.Invalid {
		if !disabled["attention"] {
			// The casts autocast inserts hide the decomposition from the matcher: form attention
			// first (as train steps do), and autocast runs the op in the low dtype.
			st.Graph = findAttention(st.Graph)
		}
		Autocast(st.Graph, opt.AMP)
	}
	res := &Result{}
	for i := range passes {
		p := &passes[i]
		if disabled[p.name] {
			res.Timings = append(res.Timings, Timing{Pass: p.name, Skipped: true})
			continue
		}
		if p.stage != "graph" && st.Kernels == nil && p.name != "fuse" {
			// fuse was disabled: later stages work on the unfused kernel graph, built under the
			// name of the pass that needs it (a panic there is reported like one in the pass).
			// fuse itself forms the kernel graph from the source graph.
			eager := pass{name: p.name, fn: func(st *State) (err error) {
				st.Kernels, err = eagerKernels(st.Graph)
				return err
			}}
			if err := runPass(&eager, st); err != nil {
				return nil, err
			}
		}
		start := time.Now()
		err := runPass(p, st)
		res.Timings = append(res.Timings, Timing{Pass: p.name, Duration: time.Since(start)})
		if err != nil {
			return nil, err
		}
		if opt.VerifyEach {
			if err := verifyStage(p.stage, st); err != nil {
				return nil, fmt.Errorf("after pass %s: %w", p.name, err)
			}
		}
		if opt.DumpTo != nil && (opt.DumpAfter == p.name || opt.DumpAfter == "all") {
			fmt.Fprintf(opt.DumpTo, "// after %s\n", p.name)
			dump(opt.DumpTo, p.stage, st)
		}
	}
	res.Graph, res.Kernels, res.Plan, res.Stats = st.Graph, st.Kernels, st.Plan, st.Stats
	if opt.Timings != nil {
		WriteTimings(opt.Timings, res.Timings)
	}
	return res, nil
}

// TraceEnv is the environment variable that, when set to anything non-empty, appends the Go
// stack of a panic inside a pass to the error (for reports from users; without it the error is
// one line).
const TraceEnv = "GCOMP_TRACE"

// runPass runs one pass, turning a panic into an error that names it: one line
// "pass NAME: internal error: VALUE", followed by the stack only when TraceEnv is set.
func runPass(p *pass, st *State) (err error) {
	defer func() {
		if r := recover(); r != nil {
			msg := strings.Join(strings.Fields(fmt.Sprint(r)), " ")
			if os.Getenv(TraceEnv) != "" {
				err = fmt.Errorf("pass %s: internal error: %s\n%s", p.name, msg, debug.Stack())
			} else {
				err = fmt.Errorf("pass %s: internal error: %s", p.name, msg)
			}
		}
	}()
	if err := p.fn(st); err != nil {
		return fmt.Errorf("pass %s: %w", p.name, err)
	}
	return nil
}

// verifyStage runs the checker for what the pass produced.
func verifyStage(stage string, st *State) error {
	switch stage {
	case "graph":
		return ops.Verify(st.Graph)
	case "kernels":
		return CheckKernels(st.Kernels)
	case "plan":
		return CheckPlan(st.Kernels, st.Plan)
	}
	return nil
}

func dump(w io.Writer, stage string, st *State) {
	switch stage {
	case "graph":
		io.WriteString(w, st.Graph.String())
	case "kernels":
		io.WriteString(w, st.Kernels.String())
	case "plan":
		io.WriteString(w, st.Plan.String())
	case "stats":
		st.Stats.WriteTable(w)
	}
}

// WriteTimings prints per-pass times as a table.
func WriteTimings(w io.Writer, ts []Timing) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "pass\ttime\t")
	var total time.Duration
	for _, t := range ts {
		if t.Skipped {
			fmt.Fprintf(tw, "%s\tdisabled\t\n", t.Pass)
			continue
		}
		total += t.Duration
		fmt.Fprintf(tw, "%s\t%s\t\n", t.Pass, t.Duration.Round(time.Microsecond))
	}
	fmt.Fprintf(tw, "total\t%s\t\n", total.Round(time.Microsecond))
	tw.Flush()
}

func find(name string) *pass {
	for i := range passes {
		if passes[i].name == name {
			return &passes[i]
		}
	}
	return nil
}

func passNames() string {
	var names []string
	for _, p := range passes {
		names = append(names, p.name)
	}
	return strings.Join(names, ", ")
}

// graphPass adapts a graph rewrite to the table. Rewrites return the new graph.
func graphPass(f func(*ir.Graph) *ir.Graph) func(*State) error {
	return func(st *State) error {
		st.Graph = f(st.Graph)
		return nil
	}
}
