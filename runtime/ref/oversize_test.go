package ref

import (
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// The IR allows a value between two ops of more than 2^31-1 elements (ir.md: attention's scores,
// which no kernel computes), but the interpreter holds every value: it refuses one, naming it,
// before it allocates it (16 GiB here).
func TestOversizeValue(t *testing.T) {
	g, err := ir.Parse("big.gir", []byte(`graph big {
  input %x : f32[]
  %0 = broadcast_in_dim(%x) {dims=[], shape=[4,65536,8192]} : f32[4,65536,8192]
  %1 = reduce_sum(%0) {axes=[0,1,2]} : f32[]
  output y = %1
}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := "big.gir:3: %0 = broadcast_in_dim(%x) {dims=[], shape=[4,65536,8192]} : f32[4,65536,8192]: the reference semantics hold the value in memory: its dimensions multiply to 2147483648, and a tensor holds at most 2147483647 (2^31-1) elements in memory"
	if _, err := Run(g, map[string]*tensor.Tensor{"x": tensor.New(ir.T(ir.F32))}, nil); err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
}
