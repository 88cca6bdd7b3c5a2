package cuda

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gcomp/gcomp/frontend"
	"github.com/gcomp/gcomp/frontend/nn"
	"github.com/gcomp/gcomp/ir"
)

// The driver calls of prefetched runs with CUDA graphs: the wait for the upload comes before the
// capture (a capturing stream may not wait for an event recorded outside it); the first run on each
// input buffer records its launches on the compute stream and launches the graph; a later run on
// a buffer already recorded only launches that graph, and the record after it orders the next
// upload into that buffer as before.
func TestGraphCalls(t *testing.T) {
	f := newFake()
	d := openFake(t, f, Options{})
	prog, _ := prefetchedSteps(t, f, d, true, func(b *frontend.Builder) {
		x := b.Input("x", ir.F32, 4, 8)
		b.Output("y", nn.NewLinear(b, "fc2", 16, 2).Forward(nn.NewLinear(b, "fc1", 8, 16).Forward(x).Relu()))
	})
	defer prog.Close()
	var got []string
	for _, c := range f.calls {
		w := strings.Fields(c)
		switch {
		case w[0] == "wait" && w[1] == fmt.Sprintf("s=%x", d.stream):
			got = append(got, "compute waits for the upload")
		case w[0] == "graph":
			got = append(got, strings.Join(w[:3], " "))
		case w[0] == "begin", w[0] == "end", w[0] == "capture":
			got = append(got, strings.Join(w[:2], " "))
		case w[0] == "launch":
			got = append(got, "launch") // outside a graph: never
		}
	}
	want := `compute waits for the upload
begin capture
capture launch
capture launch
end capture
graph launch g=9001
compute waits for the upload
begin capture
capture launch
capture launch
end capture
graph launch g=9002
compute waits for the upload
graph launch g=9001`
	if g := strings.Join(got, "\n"); g != want {
		t.Errorf("driver calls:\n%s\nwant:\n%s\nall calls:\n%s", g, want, strings.Join(f.calls, "\n"))
	}
}
