package collective

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensor"
)

// kind is a collective.
type kind uint8

const (
	allReduce kind = iota + 1
	broadcast
	allGather
	reduceScatter
)

var kindNames = [...]string{allReduce: "allreduce", broadcast: "broadcast", allGather: "allgather", reduceScatter: "reducescatter"}

func (k kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// call is what every rank of a collective must agree on.
type call struct {
	Kind  kind
	DType ir.DType
	Op    Op  // allreduce, reducescatter
	Root  int // broadcast
	Count int // NCCL's count argument: allgather's per-rank send count, reducescatter's per-rank receive count
}

func (c call) String() string {
	s := fmt.Sprintf("%s of %d %s", c.Kind, c.Count, c.DType)
	switch c.Kind {
	case allReduce, reduceScatter:
		s += " (" + c.Op.String() + ")"
	case broadcast:
		s += fmt.Sprintf(" from rank %d", c.Root)
	}
	return s
}

// sendElems is the elements a rank's send buffer holds; recvElems the
// elements its recv buffer receives.
func (c call) sendElems(size int) int {
	if c.Kind == reduceScatter {
		return size * c.Count
	}
	return c.Count
}

func (c call) recvElems(size int) int {
	if c.Kind == allGather {
		return size * c.Count
	}
	return c.Count
}

// contributes reports whether rank sends its buffer to the collective (a
// broadcast needs only the root's).
func (c call) contributes(rank int) bool { return c.Kind != broadcast || rank == c.Root }

// validate checks a call's arguments against the communicator's size.
func (c call) validate(size int) error {
	if !supported(c.DType) {
		return fmt.Errorf("%s: element type %s is not one the collectives move (%v)", c.Kind, c.DType, DTypes)
	}
	if c.Count < 0 {
		return fmt.Errorf("%s: negative count %d", c.Kind, c.Count)
	}
	if (c.Kind == allReduce || c.Kind == reduceScatter) && c.Op != Sum && c.Op != Avg {
		return fmt.Errorf("%s: unknown reduction %v", c.Kind, c.Op)
	}
	if c.Kind == broadcast && (c.Root < 0 || c.Root >= size) {
		return fmt.Errorf("broadcast: root %d is not a rank of %d", c.Root, size)
	}
	return nil
}

// compute is every rank's result of c over the ranks' send buffers in.
//
// Reductions follow a ring: the data is cut into Size chunks (chunk c is
// element range c of an even split, the first Count%Size chunks one element
// longer; for ReduceScatter chunk c is rank c's block) and chunk c's sum
// starts at rank c+1 and travels 0→1→…→Size−1→0, each rank adding its own
// values in the element type's arithmetic (f16 and bf16 rounded after every
// addition, integers wrapping), until it reaches rank c; Avg then divides by
// Size. Every rank receives the same finished chunks, bit for bit, as from
// a ring all-reduce's all-gather phase.
func compute(c call, size int, in [][]byte) [][]byte {
	es := c.DType.Size()
	out := make([][]byte, size)
	switch c.Kind {
	case broadcast:
		for r := range out {
			out[r] = in[c.Root]
		}
	case allGather:
		all := make([]byte, 0, size*c.Count*es)
		for r := range size {
			all = append(all, in[r]...)
		}
		for r := range out {
			out[r] = all
		}
	case allReduce:
		res := make([]byte, c.Count*es)
		base, rem := c.Count/size, c.Count%size
		for ch := range size {
			start := ch*base + min(ch, rem)
			n := base
			if ch < rem {
				n++
			}
			ringReduce(c.DType, c.Op, in, ch, start*es, res[start*es:(start+n)*es])
		}
		for r := range out {
			out[r] = res
		}
	case reduceScatter:
		for r := range out {
			out[r] = make([]byte, c.Count*es)
			ringReduce(c.DType, c.Op, in, r, r*c.Count*es, out[r])
		}
	}
	return out
}

// ringReduce reduces the bytes at off of every rank's buffer into dst, in the
// ring's order for the chunk that ends at rank owner.
func ringReduce(dt ir.DType, op Op, in [][]byte, owner, off int, dst []byte) {
	size := len(in)
	first := (owner + 1) % size
	copy(dst, in[first][off:off+len(dst)])
	for k := 2; k <= size; k++ {
		r := (owner + k) % size
		addInto(dt, dst, in[r][off:off+len(dst)])
	}
	if op == Avg {
		divide(dt, dst, size)
	}
}

var le = binary.LittleEndian

// addInto sets dst[i] = dst[i] + src[i] in dt's arithmetic.
func addInto(dt ir.DType, dst, src []byte) {
	switch dt {
	case ir.F32:
		for i := 0; i < len(dst); i += 4 {
			s := math.Float32frombits(le.Uint32(dst[i:])) + math.Float32frombits(le.Uint32(src[i:]))
			le.PutUint32(dst[i:], math.Float32bits(s))
		}
	case ir.F64:
		for i := 0; i < len(dst); i += 8 {
			s := math.Float64frombits(le.Uint64(dst[i:])) + math.Float64frombits(le.Uint64(src[i:]))
			le.PutUint64(dst[i:], math.Float64bits(s))
		}
	case ir.F16, ir.BF16:
		// The float64 sum of two halves is exact; one rounding gives the
		// correctly rounded half sum.
		from, to := tensor.F16ToFloat, tensor.FloatToF16
		if dt == ir.BF16 {
			from, to = tensor.BF16ToFloat, tensor.FloatToBF16
		}
		for i := 0; i < len(dst); i += 2 {
			le.PutUint16(dst[i:], to(from(le.Uint16(dst[i:]))+from(le.Uint16(src[i:]))))
		}
	case ir.I32:
		for i := 0; i < len(dst); i += 4 {
			le.PutUint32(dst[i:], le.Uint32(dst[i:])+le.Uint32(src[i:]))
		}
	case ir.I64:
		for i := 0; i < len(dst); i += 8 {
			le.PutUint64(dst[i:], le.Uint64(dst[i:])+le.Uint64(src[i:]))
		}
	case ir.I8, ir.U8:
		for i := range dst {
			dst[i] += src[i]
		}
	default:
		panic("collective: addInto of " + dt.String())
	}
}

// divide sets dst[i] = dst[i] / n in dt's arithmetic.
func divide(dt ir.DType, dst []byte, n int) {
	switch dt {
	case ir.F32:
		for i := 0; i < len(dst); i += 4 {
			le.PutUint32(dst[i:], math.Float32bits(math.Float32frombits(le.Uint32(dst[i:]))/float32(n)))
		}
	case ir.F64:
		for i := 0; i < len(dst); i += 8 {
			le.PutUint64(dst[i:], math.Float64bits(math.Float64frombits(le.Uint64(dst[i:]))/float64(n)))
		}
	case ir.F16, ir.BF16:
		from, to := tensor.F16ToFloat, tensor.FloatToF16
		if dt == ir.BF16 {
			from, to = tensor.BF16ToFloat, tensor.FloatToBF16
		}
		for i := 0; i < len(dst); i += 2 {
			le.PutUint16(dst[i:], to(from(le.Uint16(dst[i:]))/float64(n)))
		}
	case ir.I32:
		for i := 0; i < len(dst); i += 4 {
			le.PutUint32(dst[i:], uint32(int32(le.Uint32(dst[i:]))/int32(n)))
		}
	case ir.I64:
		for i := 0; i < len(dst); i += 8 {
			le.PutUint64(dst[i:], uint64(int64(le.Uint64(dst[i:]))/int64(n)))
		}
	case ir.I8:
		for i := range dst {
			dst[i] = byte(int8(int(int8(dst[i])) / n))
		}
	case ir.U8:
		for i := range dst {
			dst[i] = byte(int(dst[i]) / n)
		}
	default:
		panic("collective: divide of " + dt.String())
	}
}
