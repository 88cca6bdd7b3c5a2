package passes_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/passes"
)

// A recurrence in miniature: three dependent matmuls, each with a tanh epilogue (one kernel
// each after fusion), the first result also an output.
const recurrence = `
  input %x : f32[4,16]
  param %w : f32[16,16]
  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[4,16]
  %1 = tanh(%0) : f32[4,16]
  %2 = dot_general(%1, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[4,16]
  %3 = tanh(%2) : f32[4,16]
  %4 = dot_general(%3, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[4,16]
  %5 = tanh(%4) : f32[4,16]
  %6 = dot_general(%5, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[4,16]
  output h1 = %1
  output y = %6`

// Loop kernels only: exp is not recomputed per broadcast element, nor is tanh∘log.
const loopChain = `
  input %x : f32[8]
  %0 = exp(%x) : f32[8]
  %1 = broadcast_in_dim(%0) {dims=[0], shape=[8,8]} : f32[8,8]
  %2 = tanh(%1) : f32[8,8]
  %3 = log(%2) : f32[8,8]
  %4 = broadcast_in_dim(%3) {dims=[0,1], shape=[8,8,4]} : f32[8,8,4]
  %5 = neg(%4) : f32[8,8,4]
  output y = %5`

// loopChain at 4096 times the size: with the bounds lifted the run qualifies, but one block
// would move 4 MB on one SM's share of the machine.
var bigLoopChain = strings.NewReplacer("f32[8]", "f32[4096]", "f32[8,8]", "f32[4096,64]", "shape=[8,8]", "shape=[4096,64]",
	"f32[8,8,4]", "f32[4096,64,4]", "shape=[8,8,4]", "shape=[4096,64,4]").Replace(loopChain)

// A chain of two matmuls and a sibling of its first reading the same input (Llama's value
// projection beside the query and key ones), the last in schedule order.
const siblings = `
  input %x : f32[4,16]
  param %w : f32[16,16]
  param %u : f32[16,16]
  %0 = dot_general(%x, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[4,16]
  %1 = tanh(%0) : f32[4,16]
  %2 = dot_general(%1, %w) {lhs_contract=[1], rhs_contract=[0]} : f32[4,16]
  %3 = dot_general(%x, %u) {lhs_contract=[1], rhs_contract=[0]} : f32[4,16]
  output a = %2
  output b = %3`

var unbounded = passes.FusionOptions{PersistElems: 1 << 21, PersistFlops: 1 << 30, PersistShared: 1 << 30}

// What the persist pass forms: which kernels, which values stay in shared memory, which go to
// global memory. compile checks each result bit for bit against the source graph.
func TestPersist(t *testing.T) {
	for _, tc := range []struct {
		name    string
		src     string
		opt     passes.FusionOptions
		kernels string // Name:kind of every kernel
		stages  int    // of the first kernel
		shared  string // its shared slots, "%name@offset"
		writes  string // its global writes
	}{
		{"loops only", loopChain, passes.FusionOptions{}, "k0_persistent:persistent", 3, "%t1@256, %t4@0", "%y"},
		// h1 is an output and read by the next step: written to memory and kept in shared memory.
		{"matmuls with an output inside", recurrence, passes.FusionOptions{}, "k0_persistent:persistent", 4,
			"%h1@0, %t5@256, %t7@0", "%h1, %y"},
		// 2112 flops a step: three steps fit 6400, the fourth is left on its own (a run of one).
		{"cut by flops", recurrence, passes.FusionOptions{PersistFlops: 6400}, "k0_persistent:persistent k1_matmul:contraction", 3,
			"%h1@0, %t5@256", "%h1, %t7"},
		// Two slots live at once need 512 bytes.
		{"cut by shared memory", recurrence, passes.FusionOptions{PersistShared: 511},
			"k0_matmul_tanh:contraction k1_matmul_tanh:contraction k2_matmul_tanh:contraction k3_matmul:contraction", 0, "", ""},
		{"cut by space", loopChain, passes.FusionOptions{PersistElems: 128},
			"k0_exp:loop k1_tanh_log:loop k2_neg:loop", 0, "", ""},
		{"two stages are not enough", loopChain, passes.FusionOptions{PersistStages: 4},
			"k0_exp:loop k1_tanh_log:loop k2_neg:loop", 0, "", ""},
		// The cost model decides: three launches (3 × 3.25 µs) beat one block doing it all.
		{"slower on one block", bigLoopChain, unbounded, "k0_exp:loop k1_tanh_log:loop k2_neg:loop", 0, "", ""},
		{"small runs still persist without the bounds", loopChain, unbounded, "k0_persistent:persistent", 3, "%t1@256, %t4@0", "%y"},
		// The sibling joins the run: it reads what the run's first stage reads, and saves a launch.
		{"a sibling of the first stage", siblings, passes.FusionOptions{}, "k0_persistent:persistent", 3, "%t4@0", "%a, %b"},
		{"disabled", recurrence, passes.FusionOptions{PersistStages: -1},
			"k0_matmul_tanh:contraction k1_matmul_tanh:contraction k2_matmul_tanh:contraction k3_matmul:contraction", 0, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := compile(t, tc.src, passes.Options{Fusion: tc.opt})
			kg := res.Kernels
			if got := labels(kg); got != tc.kernels {
				t.Fatalf("kernels %s, want %s\n%s", got, tc.kernels, kg)
			}
			k := kg.Kernels[0]
			if k.Kind != passes.Persistent {
				return
			}
			var shared, writes []string
			for _, s := range k.Shared {
				shared = append(shared, fmt.Sprintf("%%%s@%d", s.Buffer.Name, s.Offset))
			}
			for _, b := range k.Writes {
				writes = append(writes, "%"+b.Name)
			}
			if len(k.Stages) != tc.stages || strings.Join(shared, ", ") != tc.shared || strings.Join(writes, ", ") != tc.writes {
				t.Errorf("%d stages, shared %s, writes %s; want %d, %s, %s\n%s", len(k.Stages), shared, writes, tc.stages, tc.shared, tc.writes, kg)
			}
			// Values only the stages read are in no arena: the plan has no temps for them.
			for _, b := range res.Plan.Buffers {
				for _, s := range k.Shared {
					if s.Buffer.Name == b.Name && s.Buffer.Kind == passes.SharedBuffer {
						t.Errorf("shared value %s placed in the arena", b.Name)
					}
				}
			}
			// The cost report reads each input once and writes only what leaves the kernel.
			var want int64
			for _, b := range k.Reads {
				want += b.Bytes()
			}
			for _, b := range k.Writes {
				want += b.Bytes()
			}
			if got := res.Stats.PerKernel[0].ReadBytes + res.Stats.PerKernel[0].WriteBytes; got != want {
				t.Errorf("persistent kernel moves %d DRAM bytes, want %d", got, want)
			}
		})
	}
}

// CheckKernels rejects every way a persistent kernel can be wrong.
func TestCheckPersistentRejects(t *testing.T) {
	for _, tc := range []struct {
		name   string
		break_ func(k *passes.Kernel, kg *passes.KernelGraph)
		want   string
	}{
		{"overlapping slots", func(k *passes.Kernel, _ *passes.KernelGraph) { k.Shared[1].Offset = k.Shared[0].Offset }, "overlap"},
		{"misaligned slot", func(k *passes.Kernel, _ *passes.KernelGraph) { k.Shared[0].Offset = 4 }, "not aligned"},
		{"over the shared budget", func(_ *passes.Kernel, kg *passes.KernelGraph) { kg.Bounds.PersistShared = 511 }, "more than PersistShared"},
		{"stage over the space bound", func(_ *passes.Kernel, kg *passes.KernelGraph) { kg.Bounds.PersistElems = 32 }, "more than PersistElems"},
		{"slot after its writer", func(k *passes.Kernel, _ *passes.KernelGraph) { k.Shared[1].From = 2; k.Shared[1].To = 2 }, "whose shared slot starts at stage 2"},
		{"read after its slot", func(k *passes.Kernel, _ *passes.KernelGraph) { k.Shared[0].To = 0 }, "neither read by the kernel nor in shared memory"},
		{"value lost", func(k *passes.Kernel, _ *passes.KernelGraph) { k.Shared = k.Shared[:1] }, "neither"},
		{"row stage", func(k *passes.Kernel, _ *passes.KernelGraph) { k.Stages[1].Kind = passes.Row }, "cannot be a stage"},
		{"one stage", func(k *passes.Kernel, _ *passes.KernelGraph) { k.Stages = k.Stages[:1] }, "1 stages"},
		{"stages elsewhere", func(k *passes.Kernel, kg *passes.KernelGraph) { kg.Kernels[1].Stages = k.Stages }, "contraction kernel with stages"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kg := compile(t, recurrence, passes.Options{Fusion: passes.FusionOptions{PersistFlops: 6400}}).Kernels
			if err := passes.CheckKernels(kg); err != nil {
				t.Fatal(err)
			}
			tc.break_(kg.Kernels[0], kg)
			err := passes.CheckKernels(kg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// A large LSTM (hidden 1024) is beyond one block: its gate matmuls have 4·4·1024 elements and
// 2·4·4096·1024 flops a step, so no run forms and every step keeps its tiled matmul kernel.
func TestPersistLargeLSTM(t *testing.T) {
	g, err := frontend.Build("lstm1024", func(b *frontend.Builder) {
		x := b.Input("x", frontend.F32, 4, 3, 16)
		h0 := b.Input("h0", frontend.F32, 1, 4, 1024)
		c0 := b.Input("c0", frontend.F32, 1, 4, 1024)
		out, hn, cn := nn.NewLSTM(b, "lstm", 16, 1024, nn.RNNOptions{NumLayers: 1, BatchFirst: true}).Forward(x, h0, c0)
		b.Output("out", out)
		b.Output("h_n", hn)
		b.Output("c_n", cn)
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := passes.Run(g, passes.Options{VerifyEach: true})
	if err != nil {
		t.Fatal(err)
	}
	matmuls := 0
	for _, k := range res.Kernels.Kernels {
		if k.Kind == passes.Persistent {
			t.Fatalf("a persistent kernel for a large LSTM:\n%s", res.Kernels)
		}
		if k.Kind == passes.Contraction {
			matmuls++
		}
	}
	if matmuls != 4 { // the batched input projection and one per step
		t.Errorf("%d contraction kernels, want 4:\n%s", matmuls, res.Kernels)
	}
}
