package passes_test

import (
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/passes"
)

// In eval mode a BatchNorm after a convolution costs nothing beyond the convolution's
// epilogue: one kernel per run, the same as the convolution alone, whose DRAM bytes exceed the
// convolution's by the per-channel vectors it reads; rsqrt(running_var+eps) is a bind-time
// kernel that the cost report leaves out of its totals, and its output lives over the whole
// schedule.
func TestBindTimeBatchNorm(t *testing.T) {
	build := func(bn bool) *passes.Result {
		return runChecked(t, "convbn", func(b *frontend.Builder) {
			x := b.Input("x", ir.F32, 2, 3, 8, 8)
			y := nn.NewConv2d(b, "conv", 3, 4, 3, nn.Conv2dOptions{Padding: 1, NoBias: true}).Forward(x)
			if bn {
				y = nn.NewBatchNorm2d(b, "bn", 4).Forward(y)
			}
			b.Output("y", y.Relu())
		})
	}
	conv, convBN := build(false), build(true)
	s := convBN.Stats
	if s.Kernels != 1 || s.BindKernels != 1 || conv.Stats.Kernels != 1 || conv.Stats.BindKernels != 0 {
		t.Fatalf("conv+bn: %d kernels per run and %d bind-time; conv: %d and %d; want 1 and 1, 1 and 0",
			s.Kernels, s.BindKernels, conv.Stats.Kernels, conv.Stats.BindKernels)
	}
	// The epilogue reads the scale rsqrt(var+eps)·weight and the shift bias − running_mean·scale,
	// which the bind-time kernel computes: 2 vectors of 4 floats.
	if extra := s.DRAMBytes - conv.Stats.DRAMBytes; extra != 2*4*4 {
		t.Errorf("conv+bn reads and writes %d bytes more per run than conv, want %d", extra, 2*4*4)
	}
	var bind, run *passes.Kernel
	for _, k := range convBN.Kernels.Kernels {
		if k.BindTime {
			bind = k
		} else {
			run = k
		}
	}
	for _, b := range bind.Reads {
		if b.Kind != passes.ParamBuffer {
			t.Errorf("bind-time kernel %s reads %s buffer %s", bind.Name, b.Kind, b.Name)
		}
	}
	if run.Kind != passes.Contraction || run.Reads[0].Name != "x" {
		t.Errorf("the per-run kernel is %s %s reading %s, want the convolution reading x", run.Kind, run.Name, run.Reads[0].Name)
	}
	n := len(convBN.Kernels.Kernels)
	for _, pb := range convBN.Plan.Buffers {
		if pb.Name == bind.Writes[0].Name && (pb.LiveFrom != 0 || pb.LiveTo != n-1 || pb.InPlaceOf != "") {
			t.Errorf("bind-time output %s lives k%d..k%d (in place of %q), want k0..k%d", pb.Name, pb.LiveFrom, pb.LiveTo, pb.InPlaceOf, n-1)
		}
	}
	checkPerRunTime(t, s)
}

// A transposed convolution's weights are flipped and their channels swapped (views and
// gathers of the parameter): the convolution kernel reads them as a buffer in its own layout,
// which the implicit-GEMM template needs (a transpose inside the kernel sent it to the direct
// template, one thread per output in f64), and the kernels that permute them are bind-time.
func TestBindTimeConvTransposeWeights(t *testing.T) {
	g, err := frontend.Build("convt", func(b *frontend.Builder) {
		// Large enough that the persist pass leaves the kernels alone.
		x := b.Input("x", ir.F32, 4, 16, 16, 16)
		b.Output("y", nn.NewConvTranspose2d(b, "up", 16, 16, 3, nn.ConvTranspose2dOptions{Stride: 2, Padding: 1, OutputPadding: 1}).Forward(x))
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := passes.Run(g, passes.Options{VerifyEach: true})
	if err != nil {
		t.Fatal(err)
	}
	convs := 0
	for _, k := range res.Kernels.Kernels {
		if k.Kind != passes.Contraction {
			continue
		}
		convs++
		for _, v := range k.Body.Values {
			if v.Op == "transpose" {
				t.Errorf("%s computes %s in the convolution kernel:\n%s", k.Name, v.Op, res.Kernels)
			}
		}
		if k.BindTime {
			t.Errorf("%s reads the input and is bind-time", k.Name)
		}
	}
	if convs != 1 || res.Stats.BindKernels == 0 {
		t.Errorf("%d convolutions, %d bind-time kernels, want 1 and some:\n%s", convs, res.Stats.BindKernels, res.Kernels)
	}
}

// convTBNConv is a transposed convolution on a 5×5 input, BatchNorm, ReLU and a convolution:
// small enough that the persist pass merges its per-run kernels, with parameter-only work (the
// weight flip and channel swap, rsqrt(running_var+eps)) among them.
func convTBNConv(b *frontend.Builder) {
	x := b.Input("x", ir.F32, 1, 4, 5, 5)
	y := nn.NewConvTranspose2d(b, "up", 4, 4, 3, nn.ConvTranspose2dOptions{Stride: 2, Padding: 1, OutputPadding: 1}).Forward(x)
	y = nn.NewBatchNorm2d(b, "bn", 4).Forward(y).Relu()
	b.Output("y", nn.NewConv2d(b, "conv", 4, 4, 3, nn.Conv2dOptions{Padding: 1}).Forward(y).Relu())
}

// The bindtime pass decides before the persist pass: parameter-only kernels are bind-time and
// come first in the order, and no stage of a persistent kernel computes from parameters alone
// (before, the persist pass merged the weight flip and the rsqrt into the per-run persistent
// kernel, which then ran them every run). The per-run kernels still persist; the cost report
// counts them only.
func TestBindTimeBeforePersist(t *testing.T) {
	res := runChecked(t, "convt_bn_conv", convTBNConv)
	ks := res.Kernels.Kernels
	bound := map[*passes.Buffer]bool{}
	paramOnly := func(k *passes.Kernel) bool {
		for _, b := range k.Reads {
			if b.Kind != passes.ParamBuffer && !bound[b] {
				return false
			}
		}
		return true
	}
	bind, persistent := 0, 0
	for i, k := range ks {
		if k.BindTime {
			if i != bind {
				t.Errorf("bind-time kernel %s at %d follows a per-run kernel", k.Name, i)
			}
			bind++
			for _, b := range k.Writes {
				bound[b] = true
			}
			continue
		}
		if paramOnly(k) {
			t.Errorf("per-run kernel %s reads parameters only", k.Name)
		}
		if k.Kind == passes.Persistent {
			persistent++
		}
		for _, s := range k.Stages {
			if paramOnly(s) {
				t.Errorf("stage %s of %s reads parameters only", s.Name, k.Name)
			}
		}
	}
	// The weight flip and channel swap (2) and rsqrt(running_var+eps).
	if bind != 3 || persistent != 1 || len(ks) != 4 {
		t.Errorf("%d kernels, %d bind-time, %d persistent; want 4, 3, 1:\n%s", len(ks), bind, persistent, res.Kernels)
	}
	s := res.Stats
	if s.Kernels != len(ks)-bind || s.BindKernels != bind {
		t.Errorf("cost report: %d kernels per run and %d bind-time, want %d and %d", s.Kernels, s.BindKernels, len(ks)-bind, bind)
	}
	checkPerRunTime(t, s)
}

// runChecked builds a model and runs the pipeline on it with the checkers on, and checks the
// memory plan.
func runChecked(t *testing.T, name string, model func(*frontend.Builder)) *passes.Result {
	t.Helper()
	g, err := frontend.Build(name, model)
	if err != nil {
		t.Fatal(err)
	}
	res, err := passes.Run(g, passes.Options{VerifyEach: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := passes.CheckPlan(res.Kernels, res.Plan); err != nil {
		t.Fatal(err)
	}
	return res
}

// checkPerRunTime checks that the cost report's modeled kernel time is its per-run kernels'.
func checkPerRunTime(t *testing.T, s *passes.Stats) {
	t.Helper()
	var total float64
	for _, k := range s.PerKernel {
		if !k.BindTime {
			total += k.ModeledTimeUS
		}
	}
	if total != s.ModeledKernelTimeUS {
		t.Errorf("modeled kernel time %v, the per-run kernels' sum %v", s.ModeledKernelTimeUS, total)
	}
}

// A chain of parameter-only contractions (w1·w2·w3·w4, each reading the one before) runs as one
// bind-time persistent kernel: the persist pass merges bind-time kernels among themselves, never
// with per-run ones, so the product runs once, at bind, in one launch.
func TestBindTimePersistent(t *testing.T) {
	res := runChecked(t, "chain", func(b *frontend.Builder) {
		x := b.Input("x", ir.F32, 4, 8)
		w := x.Matmul(b.Param("w1", frontend.T(ir.F32, 8, 8), frontend.Zeros()))
		p := b.Param("w2", frontend.T(ir.F32, 8, 8), frontend.Zeros())
		for _, name := range []string{"w3", "w4", "w5"} {
			p = p.Matmul(b.Param(name, frontend.T(ir.F32, 8, 8), frontend.Zeros())).Relu()
		}
		b.Output("y", w.Matmul(p))
	})
	var bind, run []*passes.Kernel
	for _, k := range res.Kernels.Kernels {
		if k.BindTime {
			bind = append(bind, k)
		} else {
			run = append(run, k)
		}
	}
	if len(bind) != 1 || bind[0].Kind != passes.Persistent || len(bind[0].Stages) != 3 {
		t.Fatalf("bind-time kernels %d (want one persistent kernel of 3 stages):\n%s", len(bind), res.Kernels)
	}
	if res.Stats.BindKernels != 1 || res.Stats.Kernels != len(run) {
		t.Errorf("cost report: %d per run, %d bind-time; want %d and 1", res.Stats.Kernels, res.Stats.BindKernels, len(run))
	}
}

// When the parameters change on every run (a train step), no kernel is bind-time: the
// parameter-only kernels stay in schedule order, where persist takes them as stages beside the
// kernels that read them, so a run launches no more kernels than the bind-time kernels and the
// per-run ones of the default pipeline together (the runtime would launch both every run), and
// the kernels still compute what the graph does.
func TestBindTimeParamsChangeEveryRun(t *testing.T) {
	g, err := frontend.Build("convt_bn_conv", convTBNConv)
	if err != nil {
		t.Fatal(err)
	}
	def, err := passes.Run(g, passes.Options{VerifyEach: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := passes.Run(g, passes.Options{VerifyEach: true, ParamsChangeEveryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := passes.CheckPlan(res.Kernels, res.Plan); err != nil {
		t.Fatal(err)
	}
	for _, k := range res.Kernels.Kernels {
		if k.BindTime {
			t.Errorf("kernel %s is bind-time although the parameters change every run", k.Name)
		}
	}
	s, d := res.Stats, def.Stats
	if s.BindKernels != 0 || d.BindKernels == 0 {
		t.Errorf("bind-time kernels: %d with the parameters changing every run, %d by default; want 0 and some", s.BindKernels, d.BindKernels)
	}
	// Here the weight flip, the channel swap and rsqrt(running_var+eps) become stages of the one
	// persistent kernel: 1 launch a run instead of 4.
	if s.Kernels > d.Kernels+d.BindKernels || s.Kernels != 1 {
		t.Errorf("%d kernels per run, want 1 (the default: %d per run and %d bind-time):\n%s", s.Kernels, d.Kernels, d.BindKernels, res.Kernels)
	}
	checkEquivalent(t, g, res, 1)
}
