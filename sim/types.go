package sim

// ptype is a PTX fundamental type.
type ptype uint8

const (
	tNone ptype = iota
	tPred
	tB8
	tB16
	tB32
	tB64
	tB128
	tU8
	tU16
	tU32
	tU64
	tS8
	tS16
	tS32
	tS64
	tF16
	tF16x2
	tBF16
	tBF16x2
	tTF32
	tF32
	tF64
	tE4M3 // fp8 mma operands only (fp8mma.go); no register or memory type
	tE5M2
)

var typeByName = map[string]ptype{
	"pred": tPred, "b8": tB8, "b16": tB16, "b32": tB32, "b64": tB64, "b128": tB128,
	"u8": tU8, "u16": tU16, "u32": tU32, "u64": tU64,
	"s8": tS8, "s16": tS16, "s32": tS32, "s64": tS64,
	"f16": tF16, "f16x2": tF16x2, "bf16": tBF16, "bf16x2": tBF16x2, "tf32": tTF32,
	"f32": tF32, "f64": tF64,
}

func (t ptype) size() int {
	switch t {
	case tPred, tB8, tU8, tS8:
		return 1
	case tB16, tU16, tS16, tF16, tBF16:
		return 2
	case tB32, tU32, tS32, tF16x2, tBF16x2, tTF32, tF32:
		return 4
	case tB64, tU64, tS64, tF64:
		return 8
	case tB128:
		return 16
	}
	return 0
}

func (t ptype) bits() uint { return uint(t.size() * 8) }

func (t ptype) signed() bool { return t >= tS8 && t <= tS64 }
func (t ptype) isFloat() bool {
	return t >= tF16 && t <= tF64
}

// mask is the value mask of a type's width.
func (t ptype) mask() uint64 {
	if t == tPred {
		return 1
	}
	if t.size() >= 8 {
		return ^uint64(0)
	}
	return 1<<t.bits() - 1
}

// sext sign-extends the low bits of v of type t to 64 bits.
func (t ptype) sext(v uint64) int64 {
	s := 64 - t.bits()
	return int64(v<<s) >> s
}

func (t ptype) String() string {
	for k, v := range typeByName {
		if v == t {
			return k
		}
	}
	return "?"
}

// space is a state space.
type space uint8

const (
	spGeneric space = iota
	spGlobal
	spShared
	spLocal  // per-thread memory: .local variables and .func parameter frames
	spKParam // kernel parameters
	spConst  // .const lives in global memory, read-only
)

func (s space) String() string {
	return [...]string{"generic", "global", "shared", "local", "param", "const"}[s]
}

// Class is an instruction class for the counters: Stats.Classes is indexed
// by it.
type Class uint8

// Instruction classes counted by Stats.Classes.
const (
	ClassInteger Class = iota
	ClassFP32
	ClassFP64
	ClassFP16
	ClassConvert
	ClassTensor
	ClassLoadGlobal
	ClassStoreGlobal
	ClassLoadShared
	ClassStoreShared
	ClassLoadLocal
	ClassStoreLocal
	ClassLoadParam
	ClassLoadConst
	ClassAtomic
	ClassWarp // shfl, vote, match, activemask
	ClassControl
	ClassBarrier
	ClassOther
	NumClasses
)

var classNames = [NumClasses]string{
	"integer", "fp32", "fp64", "fp16", "convert", "tensor",
	"ld.global", "st.global", "ld.shared", "st.shared", "ld.local", "st.local", "ld.param", "ld.const",
	"atomic", "warp", "control", "barrier", "other",
}

func (c Class) String() string { return classNames[c] }
