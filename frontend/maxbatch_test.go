package frontend_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/frontend"
)

// WithMaxBatch makes every b.Batch the dim batch in [1, n]; a model using the batch as a number
// fails at its line, and misuse is one error.
func TestMaxBatch(t *testing.T) {
	linear := func(b *frontend.Builder) {
		x := b.Input("x", frontend.F32, b.Batch(8), 4)
		y := b.Input("y", frontend.F32, b.Batch(8), 4)
		b.Output("z", x.Add(y).Reshape(-1, 2))
	}
	fixed := func(b *frontend.Builder) {
		x := b.Input("x", frontend.F32, b.Batch(8), 4)
		b.Output("y", x.Add(b.Zeros(frontend.F32, 8, 4)))
	}
	for _, tc := range []struct {
		name  string
		model func(b *frontend.Builder)
		opts  []frontend.Option
		want  string // the output's type and the dims, or the error
	}{
		{"bounded", linear, []frontend.Option{frontend.WithMaxBatch(6)}, "f32[2*batch,2] [batch in [1,6]]"},
		{"default", linear, nil, "f32[16,2] []"},
		{"batch used as a number", fixed, []frontend.Option{frontend.WithMaxBatch(6)}, "maxbatch_test.go:21: add: shapes cannot be broadcast together"},
		{"not positive", linear, []frontend.Option{frontend.WithMaxBatch(-2)}, "max batch: must be positive, have -2"},
		{"with a batch", linear, []frontend.Option{frontend.WithMaxBatch(4), frontend.WithBatch(2)}, "batch 2 and max batch 4 both asked for"},
		{"never declared", func(b *frontend.Builder) { b.Output("y", b.Input("x", frontend.F32, 8)) },
			[]frontend.Option{frontend.WithMaxBatch(4)}, "batch 4 asked for, but the model never declares its batch"},
	} {
		g, err := frontend.Build("m", tc.model, tc.opts...)
		got := ""
		if err != nil {
			got = err.Error()
		} else {
			var dims []string
			for _, d := range g.Dims {
				dims = append(dims, fmt.Sprintf("%s in [%d,%d]", d.Name, d.Lo, d.Hi))
			}
			got = g.Outputs[0].Value.Type.String() + " [" + strings.Join(dims, ", ") + "]"
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}
