package ref

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/ops"
	"github.com/gcomp/gcomp/tensor"
)

// A custom op's Go reference that never returns fails the run after the reference timeout, with
// an error naming the op, instead of hanging it; a context stops the wait too.
func TestReferenceTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	graph := func(name string) *ir.Graph {
		src := "// " + name + "\n"
		g, err := ir.Parse("m.gir", []byte(fmt.Sprintf(`graph m {
  input %%x : f32[4]
  %%0 = custom(%%x) {block=[4,1,1], dtype=f32, entry="k", file="k.cu", grid=[1,1,1], hash=%q, lang="cuda", name=%q, shape=[4], source=%q} : f32[4]
  output y = %%0
}
`, ops.SourceHash(src), name, src)))
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	ops.RegisterReference("hang", ops.SourceHash("// hang\n"), func(in []*tensor.Tensor, _ []float64) *tensor.Tensor {
		<-release
		return in[0]
	})
	ops.RegisterReference("quick", ops.SourceHash("// quick\n"), func(in []*tensor.Tensor, _ []float64) *tensor.Tensor { return in[0] })
	in := map[string]*tensor.Tensor{"x": tensor.New(ir.T(ir.F32, 4))}
	defer SetReferenceTimeout(0)
	SetReferenceTimeout(50 * time.Millisecond)
	if ReferenceTimeout() != 50*time.Millisecond {
		t.Fatalf("ReferenceTimeout() = %v", ReferenceTimeout())
	}

	if _, err := Run(graph("quick"), in, nil); err != nil {
		t.Fatalf("quick: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := Run(graph("hang"), in, nil)
		done <- err
	}()
	select {
	case err := <-done:
		want := `m.gir:3: %0 = custom(%x)`
		if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), `custom op "hang": its Go reference function did not return within 50ms (it is left running`) {
			t.Errorf("err = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run waited for a reference that never returns")
	}

	SetReferenceTimeout(time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := RunContext(ctx, graph("hang"), in, nil)
	var stop *StopError
	if !errors.As(err, &stop) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want a StopError of the context", err)
	}

	SetReferenceTimeout(0)
	if ReferenceTimeout() != DefaultReferenceTimeout {
		t.Errorf("ReferenceTimeout() = %v after SetReferenceTimeout(0)", ReferenceTimeout())
	}
}
