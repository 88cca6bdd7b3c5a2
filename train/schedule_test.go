package train

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/data"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// TestScheduleLR compares Schedule.LR with the rates PyTorch's schedulers give an SGD(lr=0.1)
// before each optimizer step (param_groups[0]["lr"]), the scheduler stepped after every step
// (CosineAnnealingLR(T_max=7, eta_min=0.001), past T_max too) or after every 3 steps, an epoch
// (StepLR(step_size=2, gamma=0.3)).
func TestScheduleLR(t *testing.T) {
	tests := []struct {
		s    Schedule
		want []float64
	}{
		{Schedule{Kind: "cosine", TMax: 7, MinLR: 0.001}, []float64{0.1, 0.09509795896116975, 0.08136274519200731,
			0.061514786230837566, 0.03948521376916245, 0.019637254807992697, 0.005902041038830259, 0.001,
			0.005902041038830253, 0.019637254807992683, 0.03948521376916243, 0.061514786230837525,
			0.08136274519200731, 0.09509795896116978, 0.10000000000000002, 0.09509795896116978, 0.08136274519200734}},
		{Schedule{Kind: "step", StepSize: 2, Gamma: 0.3, StepsPerEpoch: 3}, []float64{0.1, 0.1, 0.1, 0.1, 0.1, 0.1,
			0.03, 0.03, 0.03, 0.03, 0.03, 0.03, 0.009, 0.009, 0.009, 0.009, 0.009, 0.009, 0.0027, 0.0027}},
	}
	for _, tt := range tests {
		for i, w := range tt.want {
			if got := tt.s.LR(0.1, i+1); math.Abs(got-w) > 1e-14 {
				t.Errorf("%s: step %d: %.17g, PyTorch %.17g", &tt.s, i+1, got, w)
			}
		}
	}
}

// TestScheduledOptimizersMatchPyTorch trains w f64[3] on loss = Σ w·x + Σ w² for 6 steps and
// compares w after each step with PyTorch's (torch.float64):
//
//	w = nn.Parameter(torch.tensor([0.5, -0.3, 0.2])); x = torch.tensor([1.0, 2.0, -1.5])
//	for k in 1..6: zero_grad(); ((w*x).sum() + (w*w).sum()).backward(); opt.step(); sched.step()
//
// with sched.step() after every step except for StepLR, stepped every 2 (an epoch of 2 batches).
func TestScheduledOptimizersMatchPyTorch(t *testing.T) {
	adamw := NewAdamW()
	adamw.LR, adamw.WeightDecay = 0.05, 0.1
	adam := NewAdam()
	adam.LR = 0.05
	tests := []struct {
		name  string
		opt   Optimizer
		sched Schedule
		want  [][3]float64
	}{
		{"AdamW(lr=0.05, weight_decay=0.1), CosineAnnealingLR(T_max=4, eta_min=0.001)", adamw,
			Schedule{Kind: "cosine", TMax: 4, MinLR: 0.001}, [][3]float64{
				{0.44750000025, -0.34849999964285716, 0.24899999954545454},
				{0.40283521880961193, -0.3897240812837741, 0.2906073536969258},
				{0.37642057529447753, -0.4140691581089519, 0.31513890539001355},
				{0.3679943063096237, -0.421824241394859, 0.3229405937629486},
				{0.3669663660256293, -0.42276937032595047, 0.32389032235490667},
				{0.35857203189507686, -0.43048298146890573, 0.3316363668143617}}},
		{"Adam(lr=0.05), StepLR(step_size=1, gamma=0.5)", adam,
			Schedule{Kind: "step", StepSize: 1, Gamma: 0.5, StepsPerEpoch: 2}, [][3]float64{
				{0.45000000025, -0.3499999996428571, 0.24999999954545454},
				{0.4000832433105464, -0.3998692645663796, 0.2998194186132678},
				{0.37519746985830166, -0.42468712558652577, 0.3245640977518614},
				{0.35037750725202027, -0.44939921504111385, 0.34915870197551835},
				{0.3380038072794425, -0.4616965946109972, 0.3613721541941958},
				{0.32566150604762095, -0.4739432246221102, 0.3735128835969443}}},
		{"SGD(lr=0.1, momentum=0.9), CosineAnnealingLR(T_max=5)", &SGD{LR: 0.1, Momentum: 0.9},
			Schedule{Kind: "cosine", TMax: 5}, [][3]float64{
				{0.3, -0.44, 0.31000000000000005},
				{-0.007532889043741138, -0.6552730223306188, 0.47914308897405766},
				{-0.2722772709243557, -0.840594089647049, 0.6247524990083957},
				{-0.41378666078251214, -0.9396506625477584, 0.7025826634303817},
				{-0.4506341991175932, -0.9654439393823152, 0.7228488095146762},
				{-0.4506341991175932, -0.9654439393823152, 0.7228488095146762}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sched := tt.sched
			checkTinyTrajectory(t, tt.opt, &sched, tt.want)
		})
	}
}

// checkTinyTrajectory trains w f64[3] = [0.5, -0.3, 0.2] on loss = Σ w·x + Σ w², x = [1, 2,
// -1.5], with opt under sched on the reference interpreter, and compares w after each step with
// want's (PyTorch's).
func checkTinyTrajectory(t *testing.T, opt Optimizer, sched *Schedule, want [][3]float64) {
	t.Helper()
	model := func(b *frontend.Builder) {
		w := b.Param("w", ir.T(ir.F64, 3), frontend.Zeros())
		x := b.Input("x", frontend.F64, 3)
		b.Output("loss", w.Mul(x).Sum().Add(w.Mul(w).Sum()))
	}
	x := tensor.New(ir.T(ir.F64, 3))
	copy(x.F, []float64{1, 2, -1.5})
	s, err := Step("tiny", model, opt, Options{Schedule: sched})
	if err != nil {
		t.Fatal(err)
	}
	w := tensor.New(ir.T(ir.F64, 3))
	copy(w.F, []float64{0.5, -0.3, 0.2})
	tr := NewRefTrainer(s, map[string]*tensor.Tensor{"w": w})
	for k, want := range want {
		if _, err := tr.Run(map[string]*tensor.Tensor{"x": x}); err != nil {
			t.Fatal(err)
		}
		for j, g := range tr.Params["w"].F {
			if math.Abs(g-want[j]) > 1e-12*max(1, math.Abs(want[j])) {
				t.Errorf("step %d, w[%d] = %.17g, PyTorch %.17g", k+1, j, g, want[j])
			}
		}
	}
}

// TestScheduleOfConstantRate: a StepLR with gamma 1 keeps the rate, so each optimizer trains
// exactly as without a schedule (the scheduled rate reaches every place the constant one does).
func TestScheduleOfConstantRate(t *testing.T) {
	adamw := NewAdamW()
	adamw.LR = 0.01
	for _, opt := range []Optimizer{&SGD{LR: 0.1, Momentum: 0.9, WeightDecay: 0.01}, NewAdam(), adamw} {
		_, _, plain, _ := tinyStep(t, opt, Options{})
		_, _, sched, _ := tinyStep(t, opt, Options{Schedule: &Schedule{Kind: "step", StepSize: 1, Gamma: 1, StepsPerEpoch: 1}})
		for _, name := range []string{"w", "b"} {
			if !equalBits(plain.Params[name], sched.Params[name]) {
				t.Errorf("%s: %s after a step: %v without a schedule, %v with a constant one", opt.Name(), name, plain.Params[name].F, sched.Params[name].F)
			}
		}
	}
}

func TestScheduleStringRoundTrip(t *testing.T) {
	for _, s := range []Schedule{
		{Kind: "cosine", TMax: 9375, MinLR: 1e-5},
		{Kind: "step", StepSize: 2, Gamma: 0.1, StepsPerEpoch: 1875},
	} {
		got, err := ParseSchedule(s.String())
		if err != nil || *got != s {
			t.Errorf("ParseSchedule(%q) = %+v, %v", s.String(), got, err)
		}
	}
	for text, want := range map[string]string{
		"":                                  "empty",
		"linear":                            `unknown lr schedule "linear"`,
		"cosine T_max=10":                   "incomplete",
		"cosine T_max=10 eta_min=0 gamma=1": `unexpected "gamma=1"`,
		"cosine T_max=x eta_min=0":          "T_max",
		"cosine T_max=0 eta_min=0":          "T_max 0",
		"cosine T_max=16777217 eta_min=0":   "want 1 to 16777216",
		"step step_size=1 gamma=-1 steps_per_epoch=3": "invalid gamma -1",
	} {
		if _, err := ParseSchedule(text); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseSchedule(%q): error %v, want %q", text, err, want)
		}
	}
}

// TestCheckpointKeepsSchedule: a checkpoint records its schedule, and a step of another schedule
// (or none) refuses it.
func TestCheckpointKeepsSchedule(t *testing.T) {
	cos := &Schedule{Kind: "cosine", TMax: 10}
	s, _, tr, _ := tinyStep(t, NewAdam(), Options{Schedule: cos})
	path := filepath.Join(t.TempDir(), "c.safetensors")
	if err := s.SaveCheckpoint(path, tr.Params, tr.State, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, meta, err := s.LoadCheckpoint(path); err != nil || meta[MetaSchedule] != cos.String() {
		t.Fatalf("load: %v, schedule %q", err, meta[MetaSchedule])
	}
	for _, o := range []Options{{}, {Schedule: &Schedule{Kind: "cosine", TMax: 20}}} {
		other, err := Step("tiny", tinyLinear, NewAdam(), o)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := other.LoadCheckpoint(path); err == nil || !strings.Contains(err.Error(), "lr schedule") {
			t.Errorf("schedule %v: loading a checkpoint of %s: %v", o.Schedule, cos, err)
		}
	}
}

// A run stopped after an epoch and resumed from its checkpoint continues the schedule: its
// weights end bit for bit as those of the uninterrupted run.
func TestFitResumesSchedule(t *testing.T) {
	tr, te, err := data.ReadNPYDir("testdata/mixture")
	if err != nil {
		t.Fatal(err)
	}
	m := buildModel(t, mixtureModel, Loss{Name: CrossEntropyLoss})
	adam := NewAdam()
	adam.LR = 0.01
	batches := tr.Len() / m.Batch
	step, err := m.Step(adam, Options{Seed: 2, Schedule: &Schedule{Kind: "cosine", TMax: 3 * batches}})
	if err != nil {
		t.Fatal(err)
	}
	whole, err := Fit(m, FitOptions{Step: step, Train: tr, Epochs: 3, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "c.safetensors")
	stop := func(EpochEnd) error { return ErrStop }
	if _, err := Fit(m, FitOptions{Step: step, Train: tr, Test: te, Epochs: 3, Seed: 2, Save: path, OnEpoch: stop}); err != nil {
		t.Fatal(err)
	}
	from, err := step.Resume(path)
	if err != nil {
		t.Fatal(err)
	}
	resumed, err := Fit(m, FitOptions{Step: step, Train: tr, Epochs: 2, Seed: 2, Resume: from})
	if err != nil {
		t.Fatal(err)
	}
	for name, w := range whole.Params {
		if !equalBits(w, resumed.Params[name]) {
			t.Errorf("%s differs between the whole run and the resumed one", name)
		}
	}
}

// FitOptions.Schedule is for the step Fit builds: with a Step of its own, which carries its
// schedule, it is an error rather than ignored.
func TestFitScheduleNeedsFitsStep(t *testing.T) {
	m := buildModel(t, mixtureModel, Loss{Name: CrossEntropyLoss})
	step, err := m.Step(NewAdam(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	tr, _, err := data.ReadNPYDir("testdata/mixture")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Fit(m, FitOptions{Step: step, Schedule: &Schedule{Kind: "cosine", TMax: 4}, Train: tr, Epochs: 1})
	if err == nil || !strings.Contains(err.Error(), "give the schedule in the step's Options") {
		t.Errorf("Fit with a Step and a Schedule: %v", err)
	}
}

// FuzzParseSchedule: a checkpoint's schedule metadata is untrusted text. ParseSchedule never
// panics, and what it accepts passes Check and reads back from its own String.
func FuzzParseSchedule(f *testing.F) {
	for _, s := range []*Schedule{NewOneCycle(100), {Kind: "cosine", TMax: 10, MinLR: 1e-5}, {Kind: "step", StepSize: 2, Gamma: 0.1, StepsPerEpoch: 3}} {
		f.Add(s.String())
	}
	f.Add("onecycle total_steps=2 pct_start=0.5 div_factor=25 final_div_factor=1e4 cycle_momentum=1 base_momentum=0.85 max_momentum=0.95")
	f.Add("cosine T_max=1 T_max=2 eta_min=0")
	f.Fuzz(func(t *testing.T, text string) {
		s, err := ParseSchedule(text)
		if err != nil {
			return
		}
		if err := s.Check(); err != nil {
			t.Fatalf("ParseSchedule(%q) accepted what Check refuses: %v", text, err)
		}
		back, err := ParseSchedule(s.String())
		if err != nil || *back != *s {
			t.Fatalf("ParseSchedule(%q).String() = %q reads back as %+v, %v", text, s.String(), back, err)
		}
	})
}
