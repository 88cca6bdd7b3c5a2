package ptx

import (
	"math"
	"testing"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// philox_uniform in a loop kernel (a dropout mask and its use) assembles for sm_80 and sm_90
// without spills and gives the reference interpreter's bits on the simulator, for keys whose
// words exercise the carries (all ones, the sign bit, zero) and a stream above 2^32.
func TestPhiloxKernel(t *testing.T) {
	g := parse(t, `graph philox {
  input %x : f32[3,37]
  input %key : i64[]
  %0 = philox_uniform(%key) {shape=[3,37], stream=4294967301} : f32[3,37]
  %1 = constant() {dtype=f32, shape=[3,37], value=[0.75]} : f32[3,37]
  %2 = lt(%0, %1) : bool[3,37]
  %3 = constant() {dtype=f32, shape=[3,37], value=[0]} : f32[3,37]
  %4 = select(%2, %x, %3) : f32[3,37]
  output y = %4
  output u = %0
}
`)
	for _, k := range []int64{0, -1, math.MinInt64, 0x0123456789abcdef} {
		in := inputsFor(g, 1, 1)
		key := tensor.New(ir.T(ir.I64))
		key.I[0] = k
		in["key"] = key
		checkKernel(t, Kernel{Name: "k_philox", Graph: g}, in, true)
	}
	// A constant key: its words are immediates.
	c := parse(t, `graph philox_const {
  %k = constant() {dtype=i64, shape=[], value=[-5]} : i64[]
  %0 = philox_uniform(%k) {shape=[70]} : f32[70]
  output u = %0
}
`)
	checkKernel(t, Kernel{Name: "k_philox_const", Graph: c}, map[string]*tensor.Tensor{}, true)
}
