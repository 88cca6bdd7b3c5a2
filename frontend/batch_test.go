package frontend_test

import (
	"strings"
	"testing"

	"github.com/gcomp/gcomp/frontend"
)

func TestBatch(t *testing.T) {
	model := func(b *frontend.Builder) {
		x := b.Input("x", frontend.F32, b.Batch(8), 4)
		h := b.Zeros(frontend.F32, b.Batch(8), 4)
		b.Output("y", x.Add(h))
	}
	for _, tc := range []struct {
		opts []frontend.Option
		want string // the output's type, or the error
	}{
		{nil, "f32[8,4]"},
		{[]frontend.Option{frontend.WithBatch(3)}, "f32[3,4]"},
		{[]frontend.Option{frontend.WithBatch(8)}, "f32[8,4]"},
		{[]frontend.Option{frontend.WithBatch(-1)}, "batch: must be positive, have -1"},
	} {
		g, err := frontend.Build("m", model, tc.opts...)
		got := ""
		if err != nil {
			got = err.Error()
		} else {
			got = g.Outputs[0].Value.Type.String()
		}
		if got != tc.want {
			t.Errorf("%d options: got %q, want %q", len(tc.opts), got, tc.want)
		}
	}
}

func TestBatchErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		model func(b *frontend.Builder)
		want  string
	}{
		{"never declared", func(b *frontend.Builder) { b.Output("y", b.Input("x", frontend.F32, 8)) },
			"batch 2 asked for, but the model never declares its batch"},
		{"defaults differ", func(b *frontend.Builder) {
			x := b.Input("x", frontend.F32, b.Batch(8))
			b.Output("y", x.Add(b.Zeros(frontend.F32, b.Batch(16))))
		}, "batch: the default batch is 16 here but 8 at batch_test.go:"},
		{"not positive", func(b *frontend.Builder) { b.Output("y", b.Input("x", frontend.F32, b.Batch(0))) },
			"batch: the default batch must be positive, have 0"},
	} {
		_, err := frontend.Build("m", tc.model, frontend.WithBatch(2))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestTracedBatch(t *testing.T) {
	for _, tc := range []struct {
		opts []frontend.Option
		want int
	}{{nil, 8}, {[]frontend.Option{frontend.WithBatch(3)}, 3}} {
		got := -1
		_, err := frontend.Build("m", func(b *frontend.Builder) {
			if b.TracedBatch() != 0 {
				t.Error("TracedBatch before Batch is not 0")
			}
			b.Output("y", b.Input("x", frontend.F32, b.Batch(8)))
			got = b.TracedBatch()
		}, tc.opts...)
		if err != nil || got != tc.want {
			t.Errorf("TracedBatch = %d (%v), want %d", got, err, tc.want)
		}
	}
}
