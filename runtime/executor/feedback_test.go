package executor_test

import (
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/tensor"
)

// copyCounter is the simulator device counting device-to-device copies.
type copyCounter struct {
	*simdev.Device
	copies int
}

func (c *copyCounter) Copy(dst, src executor.Ptr, n int64) error {
	c.copies++
	return c.Device.Copy(dst, src, n)
}

// State fed back from outputs stays on the device without copies: an output with a buffer of its
// own (every output here, the identity new_k too) trades places with the input or parameter it
// replaces, and the values stay right over several runs.
func TestFeedbackDonates(t *testing.T) {
	g, err := ir.Parse("acc.gir", []byte(`graph acc {
  input %x : f32[4]
  input %s : f32[4]
  input %k : f32[4]
  param %w : f32[4] {init="ones"}
  %0 = add(%s, %x) : f32[4]
  %1 = mul(%w, %x) : f32[4]
  %2 = add(%w, %1) : f32[4]
  %3 = mul(%0, %w) : f32[4]
  output new_s = %0
  output new_w = %2
  output new_k = %k
  output y = %3
}
`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := compiler.Compile(g, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dev := &copyCounter{Device: simdev.New(simdev.Options{})}
	p, err := executor.Load(dev, res.Artifact)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	vec := func(v ...float64) *tensor.Tensor { return tensor.FromFloats(ir.T(ir.F32, 4), v) }
	if err := p.SetParams(map[string]*tensor.Tensor{"w": vec(1, 1, 1, 1)}); err != nil {
		t.Fatal(err)
	}
	if err := p.Feedback(map[string]string{"new_s": "s", "new_w": "w", "new_k": "k"}); err != nil {
		t.Fatal(err)
	}
	if err := p.SetState(map[string]*tensor.Tensor{"s": vec(0, 0, 0, 0), "k": vec(7, 7, 7, 7)}); err != nil {
		t.Fatal(err)
	}
	// s_n = s_{n-1} + x, w_n = w_{n-1} * (1 + x), y_n = s_n * w_{n-1}.
	s, w := []float64{0, 0, 0, 0}, []float64{1, 1, 1, 1}
	for run := range 4 {
		x := []float64{1, 2, 0.5, -1}
		out, err := p.Run(map[string]*tensor.Tensor{"x": vec(x...)})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 4 {
			s[i] += x[i]
			if got, want := out.Outputs["y"].F[i], s[i]*w[i]; got != want {
				t.Fatalf("run %d: y[%d] = %v, want %v", run, i, got, want)
			}
			w[i] += w[i] * x[i]
		}
		if len(out.Outputs) != 1 {
			t.Errorf("run %d returned %d outputs, want y alone", run, len(out.Outputs))
		}
	}
	for name, want := range map[string][]float64{"s": s, "w": w, "k": {7, 7, 7, 7}} {
		got, err := p.Read(name)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if got.F[i] != want[i] {
				t.Errorf("%s = %v, want %v", name, got.F, want)
				break
			}
		}
	}
	if dev.copies != 0 {
		t.Errorf("%d device copies in 4 runs, want none", dev.copies)
	}
}
