package tensor

import (
	"fmt"

	"github.com/gcomp/gcomp/ir"
	"github.com/gcomp/gcomp/tensorio"
)

// FromArray converts a tensor read from a .npy or safetensors file.
func FromArray(a *tensorio.Array) (*Tensor, error) {
	d, ok := ir.ParseDType(a.DType)
	if !ok {
		return nil, fmt.Errorf("dtype %s is not supported by gcomp tensors", a.DType)
	}
	return FromBytes(ir.Type{DType: d, Shape: ir.Shape(a.Shape).Clone()}, a.Data)
}

// Array converts x for writing to a .npy or safetensors file.
func (x *Tensor) Array() *tensorio.Array {
	return &tensorio.Array{DType: x.Type.DType.String(), Shape: x.Type.Shape.Clone(), Data: x.Bytes()}
}

// ReadNPYFile reads a .npy file as a tensor.
func ReadNPYFile(path string) (*Tensor, error) {
	a, err := tensorio.ReadNPYFile(path)
	if err != nil {
		return nil, err
	}
	x, err := FromArray(a)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return x, nil
}
