package artifact

import (
	"fmt"
	"math"
)

// ScalarBits is a scalar argument's value as the bits of its .param, in the low bytes of a
// 64-bit word (little-endian, so a 4-byte .param reads the low half): how the executor
// passes it through a device's Ptr-typed launch arguments.
func (a Arg) ScalarBits() (uint64, error) {
	v := a.Value
	integral := v == math.Trunc(v) && !math.IsInf(v, 0)
	switch a.Type {
	case "i32":
		if !integral || v < math.MinInt32 || v > math.MaxInt32 {
			return 0, fmt.Errorf("scalar %v is not an i32", v)
		}
		return uint64(uint32(int32(v))), nil
	case "i64":
		if !integral || v < math.MinInt64 || v >= math.MaxInt64 {
			return 0, fmt.Errorf("scalar %v is not an i64", v)
		}
		return uint64(int64(v)), nil
	case "f32":
		return uint64(math.Float32bits(float32(v))), nil
	case "f64":
		return math.Float64bits(v), nil
	}
	return 0, fmt.Errorf("scalar type %q is not i32, i64, f32 or f64", a.Type)
}
