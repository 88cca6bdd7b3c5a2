package load

import (
	"strings"
	"testing"
)

// seqModel is a model file whose own module type goes into an nn.Sequential; SEQ stands for the
// expression that builds the Sequential of layer1.0 and layer1.1.
const seqModel = `package toy

import (
	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
)

type Block struct {
	FC   *nn.Linear
	Relu nn.ReLU
}

func NewBlock(b *frontend.Builder, name string) *Block {
	return &Block{FC: nn.NewLinear(b, name, 4, 4)}
}

func (m *Block) Forward(x *frontend.Tensor) *frontend.Tensor { return m.Relu.Forward(m.FC.Forward(x)) }

func Model(b *frontend.Builder) {
	x := b.Input("x", frontend.F32, 2, 4)
	s := b.Sub("layer1")
	var seq *nn.Sequential
	seq = SEQ
	b.Output("y", seq.Forward(x))
}
`

// A module of the model file passes to nn.NewSequential's variadic parameter and converts to
// nn.Module as in compiled Go; every form builds the graph the slice form builds.
func TestOwnModuleInSequential(t *testing.T) {
	build := func(seq string) (string, error) {
		g, err := Source("model.go", []byte(strings.Replace(seqModel, "SEQ", seq, 1)), Options{})
		if err != nil {
			return "", err
		}
		return g.String(), nil
	}
	want, err := build(`&nn.Sequential{Modules: []nn.Module{NewBlock(s, "0"), NewBlock(s, "1")}}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, seq := range []string{
		`nn.NewSequential(NewBlock(s, "0"), NewBlock(s, "1"))`,
		`nn.NewSequential(NewBlock(s, "0"), nn.Module(NewBlock(s, "1")))`,
		`nn.NewSequential((nn.Module)(NewBlock(s, "0")), nn.NewSequential(NewBlock(s, "1")))`,
		`nn.NewSequential([]nn.Module{NewBlock(s, "0"), NewBlock(s, "1")}...)`,
		"nn.NewSequential(\n\t\tNewBlock(s, \"0\"),\n\t\tnn.Identity{},\n\t\tNewBlock(s, \"1\"),\n\t)",
		`nn.NewSequential(NewBlock(s, "0"), nn.Func(NewBlock(s, "1").Forward))`,
		`nn.NewSequential(func() (nn.Module, nn.Module) { return NewBlock(s, "0"), NewBlock(s, "1") }())`,
	} {
		got, err := build(seq)
		if err != nil {
			t.Errorf("%s: %v", seq, err)
			continue
		}
		if strings.Contains(seq, "\n") { // the same graph, its last lines two lines further down
			got = strings.NewReplacer("model.go:29", "model.go:27", "model.go:31", "model.go:29").Replace(got)
		}
		if got != want {
			t.Errorf("%s: graph\n%s\nwant\n%s", seq, got, want)
		}
	}
}

// The interpreter's panics name the model file's types as the file declares them, never as the
// anonymous struct the interpreter builds.
func TestOwnTypeNames(t *testing.T) {
	for _, tc := range []struct{ seq, want string }{
		{`any(NewBlock(s, "0")).(*nn.Sequential)`, "model.go:23: panic: interface conversion: interface {} is *toy.Block, not *nn.Sequential"},
		{`any(&struct{ B *Block }{NewBlock(s, "0")}).(*nn.Sequential)`, "model.go:23: panic: interface conversion: interface {} is *struct { B *toy.Block }, not *nn.Sequential"},
		{`any([]*Block{NewBlock(s, "0")}).(*nn.Sequential)`, "model.go:23: panic: interface conversion: interface {} is []*toy.Block, not *nn.Sequential"},
	} {
		_, err := Source("model.go", []byte(strings.Replace(seqModel, "SEQ", tc.seq, 1)), Options{})
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: error %v, want %s", tc.seq, err, tc.want)
		}
	}
}
