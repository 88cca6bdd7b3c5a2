package quant

import "fmt"

// Format is a checkpoint's quantization_config: what quant_method wrote and how.
type Format struct {
	Method    string // "gptq" or "awq"
	Bits      int    // 4 or 8 (awq: 4)
	GroupSize int    // input channels per group; -1 is one group per output channel
	DescAct   bool   // gptq: act-order, g_idx is read rather than k / GroupSize
	Sym       bool   // gptq: symmetric (informative: the zero points are stored either way)
}

// Check refuses what is not read: an unknown method, bits other than 4 and 8 (AWQ: 4), a group
// size that is neither -1 nor positive.
func (f Format) Check() error {
	switch f.Method {
	case "gptq":
		if f.Bits != 4 && f.Bits != 8 {
			return fmt.Errorf("gptq bits %d is not supported (4, 8)", f.Bits)
		}
	case "awq":
		if f.Bits != 4 {
			return fmt.Errorf("awq bits %d is not supported (4)", f.Bits)
		}
	default:
		return fmt.Errorf("quant_method %q is not supported (gptq, awq)", f.Method)
	}
	if f.GroupSize != -1 && f.GroupSize < 1 {
		return fmt.Errorf("group_size %d: want -1 or a positive size", f.GroupSize)
	}
	return nil
}

// Groups is the number of groups of k input channels: ceil(k / GroupSize), 1 per channel.
func (f Format) Groups(k int) int {
	if f.GroupSize == -1 || k == 0 {
		return 1
	}
	return (k + f.GroupSize - 1) / f.GroupSize
}

// perWord is how many values one int32 holds.
func (f Format) perWord() int { return 32 / f.Bits }

// Part is one stored tensor of a packed layer: its suffix after the layer's name, its dtype and
// its shape for a layer of n outputs and k inputs.
type Part struct {
	Suffix   string
	DType    string
	Shape    []int
	Optional bool // gptq's g_idx may be absent without act-order
}

// Parts lists the tensors a packed layer of n outputs and k inputs is stored as. The scales'
// dtype is listed as f16; f32 and bf16 scales are read as well.
func (f Format) Parts(n, k int) []Part {
	g, w := f.Groups(k), f.perWord()
	if f.Method == "awq" {
		return []Part{
			{"qweight", "i32", []int{k, n / w}, false},
			{"qzeros", "i32", []int{g, n / w}, false},
			{"scales", "f16", []int{g, n}, false},
		}
	}
	return []Part{
		{"qweight", "i32", []int{k / w, n}, false},
		{"qzeros", "i32", []int{g, n / w}, false},
		{"scales", "f16", []int{g, n}, false},
		{"g_idx", "i32", []int{k}, !f.DescAct},
	}
}

// CheckSizes refuses a layer of n outputs and k inputs whose packing would not be exact: the
// packed dimension must be a multiple of the values per int32.
func (f Format) CheckSizes(n, k int) error {
	w := f.perWord()
	if f.Method == "gptq" && k%w != 0 {
		return fmt.Errorf("%d input channels do not pack into int32s of %d %d-bit values", k, w, f.Bits)
	}
	if n%w != 0 {
		return fmt.Errorf("%d output channels do not pack into int32s of %d %d-bit values", n, w, f.Bits)
	}
	return nil
}
