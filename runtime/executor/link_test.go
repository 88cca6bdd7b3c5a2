package executor_test

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend"
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
	fwd, err := frontend.Build("classifier", classifier)
	if err != nil {
		t.Fatal(err)
	}
	s, err := train.SplitStepFromGraph(fwd, train.NewSGD(0.1), train.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dev := simdev.New(simdev.Options{})
	var progs []*executor.Program
	for _, g := range []*train.StepGraph{s.Update, s.Grad} {
		r, err := compiler.Compile(g.Graph, compiler.Options{})
		if err != nil {
			t.Fatal(err)
		}
		p, err := executor.Load(dev, r.Artifact)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		progs = append(progs, p)
	}
	upd, grd := progs[0], progs[1]
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
