package executor_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/codegen/backend"
	"github.com/gcomp/gcomp/codegen/nvvm/libnvvm"
	"github.com/gcomp/gcomp/compiler"
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/runtime/executor"
	"github.com/gcomp/gcomp/runtime/ref"
	"github.com/gcomp/gcomp/runtime/simdev"
	"github.com/gcomp/gcomp/tensor"
)

// An index outside an embedding's table fails the compiled run on the simulator with what the
// reference interpreter says: the gather and its source line, the element of the indices and
// the index, and the table (before, only "trap executed" with a PTX line and a thread). The
// error area is clean again afterwards: the next run with valid indices succeeds. The indices
// are computed in the kernel (tokens+offset) as well as read as they are. Both producers write
// the same error word (--backend ptx and nvvm).
func TestIndexOutOfRange(t *testing.T) {
	for _, name := range []string{"ptx", "nvvm"} {
		t.Run(name, func(t *testing.T) {
			if name == "nvvm" {
				libnvvm.Require(t)
			}
			producer, err := backend.New(name, "")
			if err != nil {
				t.Fatal(err)
			}
			indexOutOfRange(t, producer)
		})
	}
}

func indexOutOfRange(t *testing.T, producer backend.Producer) {
	for _, tc := range []struct {
		name   string
		shift  bool
		elem   int
		value  int64 // what the input holds
		index  int64 // the index the gather sees
		source string
	}{
		{"input", false, 4, 1000, 1000, "tokens"},
		{"negative", false, 0, -1, -1, "tokens"},
		{"computed", true, 5, 997, 1003, "the indices"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := frontend.Build("embed", func(b *frontend.Builder) {
				tokens := b.Input("tokens", ir.I64, 2, 3)
				if tc.shift {
					tokens = tokens.AddScalar(6)
				}
				b.Output("y", nn.NewEmbedding(b, "wte", 1000, 8).Forward(tokens).Relu())
			})
			if err != nil {
				t.Fatal(err)
			}
			res, err := compiler.Compile(g, compiler.Options{Producer: producer})
			if err != nil {
				t.Fatal(err)
			}
			prog, err := executor.Load(simdev.New(simdev.Options{}), res.Artifact)
			if err != nil {
				t.Fatal(err)
			}
			defer prog.Close()
			params := map[string]*tensor.Tensor{}
			for _, p := range g.Params() {
				params[p.Name] = tensor.RandomInput(p, 1)
			}
			if err := prog.SetParams(params); err != nil {
				t.Fatal(err)
			}
			tokens := &tensor.Tensor{Type: ir.T(ir.I64, 2, 3), I: []int64{1, 2, 3, 4, 5, 6}}
			tokens.I[tc.elem] = tc.value
			in := map[string]*tensor.Tensor{"tokens": tokens}
			_, err = prog.Run(in)
			_, refErr := ref.Run(g, in, params)
			if err == nil || refErr == nil {
				t.Fatalf("compiled: %v; reference: %v", err, refErr)
			}
			want := "index " + itoa(tc.index) + " (element " + itoa(int64(tc.elem)) + " of " + tc.source
			if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "is out of range [0, 1000) for table f32[1000,8]") ||
				!strings.Contains(err.Error(), "indexcheck_test.go:") || !strings.Contains(err.Error(), "gather(") {
				t.Errorf("compiled run: %v\nwant the gather's line and %q", err, want)
			}
			if want := "index " + itoa(tc.index) + " (element " + itoa(int64(tc.elem)) + " of the indices) is out of range [0, 1000)"; !strings.Contains(refErr.Error(), want) {
				t.Errorf("reference: %v, want %q", refErr, want)
			}
			tokens.I[tc.elem] = 7
			got, err := prog.Run(in)
			if err != nil {
				t.Fatalf("a valid run after the failed one: %v", err)
			}
			want2, err := ref.Run(g, in, params)
			if err != nil {
				t.Fatal(err)
			}
			for i, w := range want2["y"].F {
				if got.Outputs["y"].F[i] != w {
					t.Fatalf("y[%d] = %v, want %v", i, got.Outputs["y"].F[i], w)
				}
			}
		})
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
