package checkpoint

import (
	"encoding/binary"
	"errors"
	"math"
	"runtime/debug"
	"sync"

	"github.com/gcomp/gcomp/tensor"
)

// decoders widen one stored element to float32 (exactly: f16 and bf16 are subsets of f32).
var decoders = map[string]func([]byte) float32{
	"f32":  func(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) },
	"bf16": func(b []byte) float32 { return math.Float32frombits(uint32(binary.LittleEndian.Uint16(b)) << 16) },
	"f16":  func(b []byte) float32 { return f16Table()[binary.LittleEndian.Uint16(b)] },
}

// converters round a float32 to the requested dtype and store it, with the tensor package's
// round-to-nearest-even.
var converters = map[string]func([]byte, float32){
	"f32":  func(b []byte, f float32) { binary.LittleEndian.PutUint32(b, math.Float32bits(f)) },
	"bf16": func(b []byte, f float32) { binary.LittleEndian.PutUint16(b, tensor.FloatToBF16(float64(f))) },
	"f16":  func(b []byte, f float32) { binary.LittleEndian.PutUint16(b, tensor.FloatToF16(float64(f))) },
}

var sizes = map[string]int{"f32": 4, "f16": 2, "bf16": 2}

// f16Table holds every f16 value widened, built once from tensor.F16ToFloat: a table lookup is
// several times faster than decoding each element.
var f16Table = sync.OnceValue(func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for i := range t {
		t[i] = float32(tensor.F16ToFloat(uint16(i)))
	}
	return &t
})

// convert returns src's elements, stored as from, in a new buffer of dtype to. src may be a
// mapping of a file: a file cut short under the mapping faults on access, and the fault becomes
// an error rather than a crash.
func convert(src []byte, from, to string) (out []byte, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if _, fault := r.(interface{ Addr() uintptr }); !fault { // the runtime's memory-fault error
				panic(r)
			}
			out, err = nil, errors.New("the file changed while it was read")
		}
	}()
	if from == to {
		return append([]byte(nil), src...), nil
	}
	dec, conv := decoders[from], converters[to]
	in, size := sizes[from], sizes[to]
	n := len(src) / in
	out = make([]byte, n*size)
	if from == "bf16" && to == "f32" {
		widenBF16(out, src[:2*n])
		return out, nil
	}
	for i := range n {
		conv(out[i*size:], dec(src[i*in:]))
	}
	return out, nil
}

// widenBF16 is the common case of a bf16 checkpoint computing in f32: each element's two bytes
// become the high half of a float32, four elements per 8-byte word.
func widenBF16(out, src []byte) {
	i := 0
	for ; i+8 <= len(src); i += 8 {
		v := binary.LittleEndian.Uint64(src[i : i+8])
		o := out[2*i : 2*i+16 : 2*i+16]
		binary.LittleEndian.PutUint64(o[:8], (v&0xffff)<<16|(v>>16&0xffff)<<48)
		binary.LittleEndian.PutUint64(o[8:], (v>>32&0xffff)<<16|(v>>48)<<48)
	}
	for ; i+2 <= len(src); i += 2 {
		binary.LittleEndian.PutUint32(out[2*i:], uint32(binary.LittleEndian.Uint16(src[i:]))<<16)
	}
}
