package executor_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/check"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/tensor"
	"github.com/gcomp/gcomp/train"
)

// A train step split in two programs that share the weights (LoadSharing) and pass the
// gradients and the loss scale through linked buffers (Link) trains, step after step, what the
// two graphs train on the reference interpreter: no copy is stale, the gradients' program sees
// the weights the update wrote, and a gradient changed in place between the runs, where Buffer
// says it is (as an all-reduce changes it), is what the update reads.
func TestLinkedSplitStep(t *testing.T) {
	for _, amp := range []string{"", "f16"} {
		t.Run("amp="+amp, func(t *testing.T) {
			momentum := train.NewSGD(0.1)
			momentum.Momentum = 0.9
			fwd, err := frontend.Build("classifier", classifier)
			if err != nil {
				t.Fatal(err)
			}
			s, err := train.SplitStepFromGraph(fwd, momentum, train.Options{AMP: amp})
			if err != nil {
				t.Fatal(err)
			}
			dev := simdev.New(simdev.Options{})
			load := func(s *train.StepGraph, with *executor.Program) *executor.Program {
				r, err := compiler.Compile(s.Graph, compiler.Options{})
				if err != nil {
					t.Fatal(err)
				}
				var p *executor.Program
				if with == nil {
					p, err = executor.Load(dev, r.Artifact)
				} else {
					p, err = with.LoadSharing(dev, r.Artifact)
				}
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { p.Close() })
				return p
			}
			params, err := train.InitParams(s.Full.Graph, 1)
			if err != nil {
				t.Fatal(err)
			}
			state := s.Full.InitState()
			upd := load(s.Update, nil)
			grd := load(s.Grad, upd)
			must := func(err error) {
				t.Helper()
				if err != nil {
					t.Fatal(err)
				}
			}
			must(upd.SetParams(params))
			must(grd.SetParams(params))
			if amp != "" {
				must(grd.Link(train.ScaleName, upd, train.ScaleName))
			}
			for _, p := range s.Update.Params {
				must(upd.Link(train.GradPrefix+p, grd, train.GradPrefix+p))
			}
			must(upd.Feedback(s.Update.StateBindings))
			must(upd.SetState(state))

			refParams := map[string]*tensor.Tensor{}
			for k, v := range params {
				refParams[k] = v
			}
			for i := range 3 {
				batch := map[string]*tensor.Tensor{}
				for _, name := range s.Grad.Batch {
					batch[name] = tensor.RandomInput(s.Grad.Graph.Lookup(name), uint64(20+i))
				}
				in := map[string]*tensor.Tensor{}
				for k, v := range batch {
					in[k] = v
				}
				if amp != "" {
					in[train.ScaleName] = state[train.ScaleName]
				}
				want, err := ref.Run(s.Grad.Graph, in, refParams)
				must(err)
				got, err := grd.Run(batch)
				must(err)
				if o := check.Compare("loss", got.Outputs["loss"], want["loss"], false); !o.Pass() {
					t.Errorf("step %d: %s", i, o.First)
				}
				for _, p := range s.Update.Params {
					if got.Outputs[train.GradPrefix+p] != nil {
						t.Errorf("step %d: the linked output %s%s was copied to the host", i, train.GradPrefix, p)
					}
				}
				if i == 2 {
					p := train.GradPrefix + s.Update.Params[0]
					ptr, typ, err := grd.Buffer(p)
					must(err)
					if !typ.Equal(want[p].Type) {
						t.Fatalf("Buffer(%s) is %s, the gradient %s", p, typ, want[p].Type)
					}
					must(dev.Zero(ptr, int64(typ.Bytes())))
					want[p] = tensor.New(typ)
				}
				uin := map[string]*tensor.Tensor{}
				for _, v := range s.Update.State {
					uin[v.Name] = state[v.Name]
				}
				uparams := map[string]*tensor.Tensor{}
				for _, p := range s.Update.Params {
					uin[train.GradPrefix+p] = want[train.GradPrefix+p]
					uparams[p] = refParams[p]
				}
				wantU, err := ref.Run(s.Update.Graph, uin, uparams)
				must(err)
				for o, name := range s.Update.StateBindings {
					if _, ok := refParams[name]; ok {
						refParams[name] = wantU[o]
					} else {
						state[name] = wantU[o]
					}
				}
				_, err = upd.Run(map[string]*tensor.Tensor{})
				must(err)
				for _, p := range s.Update.Params {
					v, err := grd.Read(p)
					must(err)
					if o := check.Compare(p, v, refParams[p], false); !o.Pass() {
						t.Errorf("step %d: %s: %d elements differ, first %s", i, p, o.Bad, o.First)
					}
				}
				for _, v := range s.Update.State {
					got, err := upd.Read(v.Name)
					must(err)
					if o := check.Compare(v.Name, got, state[v.Name], false); !o.Pass() {
						t.Errorf("step %d: %s: %d elements differ, first %s", i, v.Name, o.Bad, o.First)
					}
				}
			}
		})
	}
}

// Link and LoadSharing refuse buffers that are not there or not of the input's type.
func TestLinkErrors(t *testing.T) {
	s := sgdSplit(t)
	dev := simdev.New(simdev.Options{})
	upd, grd := loadGraph(t, dev, s.Update.Graph), loadGraph(t, dev, s.Grad.Graph)
	for _, tc := range []struct {
		input, name, want string
	}{
		{"grad.nothing", "grad.fc1.weight", "no input grad.nothing"},
		{"grad.fc1.weight", "grad.nothing", "no output or input grad.nothing"},
		{"grad.fc1.weight", "grad.fc2.weight", "is f32[32,16], grad.fc2.weight is f32[4,32]"},
	} {
		if err := upd.Link(tc.input, grd, tc.name); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Link(%s, %s): %v, want %q", tc.input, tc.name, err, tc.want)
		}
	}
	if _, _, err := grd.Buffer("nothing"); err == nil {
		t.Errorf("Buffer of no buffer: no error")
	}
}

// OnLaunch is called after every kernel of a run but the bind-time ones, in plan order, and an
// error from it stops the launch naming the kernel; LastUse is the last of them that writes an
// output.
func TestOnLaunch(t *testing.T) {
	s := sgdSplit(t)
	p := loadGraph(t, simdev.New(simdev.Options{}), s.Grad.Graph)
	params, err := train.InitParams(s.Full.Graph, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SetParams(params); err != nil {
		t.Fatal(err)
	}
	batch := map[string]*tensor.Tensor{}
	for _, name := range s.Grad.Batch {
		batch[name] = tensor.RandomInput(s.Grad.Graph.Lookup(name), 1)
	}
	var seen []int
	p.OnLaunch(func(j int) error { seen = append(seen, j); return nil })
	if _, err := p.Run(batch); err != nil {
		t.Fatal(err)
	}
	var want []int
	for j, k := range p.Plan().Kernels {
		if !k.BindTime {
			want = append(want, j)
		}
	}
	if !slices.Equal(seen, want) {
		t.Errorf("OnLaunch saw kernels %v, want %v", seen, want)
	}
	for _, name := range s.Update.Params {
		j, err := p.LastUse(train.GradPrefix + name)
		if err != nil || !slices.Contains(want, j) {
			t.Errorf("LastUse(%s) = %d, %v: want a kernel of the run", train.GradPrefix+name, j, err)
		}
	}
	if _, err := p.LastUse("nothing"); err == nil {
		t.Errorf("LastUse of no output: no error")
	}
	p.OnLaunch(func(j int) error { return errors.New("stop here") })
	if _, err := p.Run(batch); err == nil || !strings.Contains(err.Error(), "stop here") || !strings.Contains(err.Error(), "after kernel") {
		t.Errorf("a failing hook: %v", err)
	}
}

// sgdSplit is the classifier's split step with SGD.
func sgdSplit(t *testing.T) *train.SplitStep {
	t.Helper()
	fwd, err := frontend.Build("classifier", classifier)
	if err != nil {
		t.Fatal(err)
	}
	s, err := train.SplitStepFromGraph(fwd, train.NewSGD(0.1), train.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// loadGraph compiles g and loads it on dev, closed when the test ends.
func loadGraph(t *testing.T, dev executor.Device, g *ir.Graph) *executor.Program {
	t.Helper()
	r, err := compiler.Compile(g, compiler.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := executor.Load(dev, r.Artifact)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}
