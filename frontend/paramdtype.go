package frontend

import "github.com/gcomp/gcomp/ir"

// WithParamDType declares every f32 parameter (weights and buffers alike) in dt instead, as
// PyTorch's model.to(dt) converts a module's floating parameters and buffers: a model built with
// WithParamDType(ir.BF16) and fed bf16 inputs computes in bf16 throughout. dt must be a float
// type; ir.Invalid (the default) keeps f32.
func WithParamDType(dt ir.DType) Option { return func(s *state) { s.paramDType = dt } }

// paramType is t with f32 replaced by the graph's parameter dtype (WithParamDType).
func (s *state) paramType(t ir.Type) ir.Type {
	if s.paramDType == ir.Invalid || t.DType != ir.F32 {
		return t
	}
	if !s.paramDType.IsFloat() {
		s.failf("WithParamDType: parameters must be of a float type, not %s", s.paramDType)
	}
	t.DType = s.paramDType
	return t
}
