package load

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// A zero-field module as the last argument of a call spanning lines once crashed the interpreter
// ("model.go:10: panic: reflect: Field index out of bounds").
func TestEmptyStructLastArgument(t *testing.T) {
	for _, module := range []string{"nn.ReLU{}", "nn.SiLU{}", "nn.Sigmoid{}", "nn.Tanh{}"} {
		src := `package toy

import (
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
)

func Model(b *frontend.Builder) {
	x := b.Input("x", frontend.F32, 2, 8)
	s := nn.NewSequential(nn.NewLinear(b, "0", 8, 8),
		` + module + `)
	b.Output("y", s.Forward(x))
}
`
		g, err := Source("model.go", []byte(src), Options{})
		if err != nil {
			t.Errorf("%s: %v", module, err)
			continue
		}
		if w := g.Lookup("0.weight"); w == nil || w.Pos != "model.go:10" {
			t.Errorf("%s: 0.weight is not declared at model.go:10:\n%s", module, g)
		}
	}
}

// modelWith is a model file whose Model runs body before declaring its output, with extra
// declarations after it.
func modelWith(body, extra string) []byte {
	return []byte("package toy\n\nimport \"github.com/gcomp/gcomp/frontend\"\n\nfunc Model(b *frontend.Builder) {\n\tx := b.Input(\"x\", frontend.F32, 2)\n\t" +
		body + "\n\tb.Output(\"y\", x)\n}\n" + extra)
}

// Model code runs under limits: a deadline (an endless loop or a blocked receive, in Model or in
// init), a memory limit (one huge make, or a heap that keeps growing), and no goroutines. Each
// ends with one clear error naming the file.
func TestModelLimits(t *testing.T) {
	opt := Options{Timeout: 500 * time.Millisecond, Memory: 64 << 20}
	tests := []struct {
		name, body, extra, want string
	}{
		{"endless loop", "for {\n\t}", "", "model.go: building the graph took longer than 500ms (an endless loop, or a receive nobody sends to?); see --load-timeout"},
		{"endless loop in init", "", "\nfunc init() {\n\tfor {\n\t}\n}\n", "model.go: building the graph took longer than 500ms"},
		{"blocked receive", "<-make(chan int)", "", "model.go: building the graph took longer than 500ms"},
		{"goroutine panic", "go func() { panic(\"boom\") }()", "", "model.go:7:2: go statements are not allowed in model files"},
		{"goroutines using the builder", "for i := 0; i < 8; i++ {\n\t\tgo b.Input(\"z\", frontend.F32, 2)\n\t}", "", "model.go:8:3: go statements are not allowed in model files"},
		{"huge make", "_ = make([]float64, 1<<40)", "", "model.go:7: panic: make of 1099511627776 elements of 8 bytes exceeds the model code's memory limit of 67108864 bytes (see --load-memory)"},
		{"make over the limit by its element size", "_ = make([]float64, 10<<20)", "", "model.go:7: panic: make of 10485760 elements of 8 bytes exceeds"},
		{"growing heap", "var keep [][]byte\n\tfor {\n\t\tkeep = append(keep, make([]byte, 1<<20))\n\t}", "", "model.go: the model code allocated more than 67108864 bytes while building its graph (see --load-memory)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Source("model.go", modelWith(tc.body, tc.extra), opt)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("err = %v\nwant prefix %q", err, tc.want)
			}
		})
	}
	// A stopped endless loop no longer runs: the interpreter's frames return.
	time.Sleep(50 * time.Millisecond)
	before := runtime.NumGoroutine()
	if _, err := Source("model.go", modelWith("for {\n\t}", ""), opt); err == nil {
		t.Fatal("endless loop loaded")
	}
	time.Sleep(100 * time.Millisecond)
	if after := runtime.NumGoroutine(); after > before {
		t.Errorf("%d goroutines before loading an endless loop, %d after: the loop still runs", before, after)
	}
}
