package ops

// torchParity closes docs/ops.md: how results in f32, f16 and bf16, under autocast and with tf32
// compare with PyTorch's, as frontend/nn's tests check them (scripts/torch_layers_reference.py).
const torchParity = `Every layer of frontend/nn (the activations, norms, convolutions, pooling, resampling, argmax/topk,
cumsum and the Transformer encoder) is checked against PyTorch 1.13 in f32, f16 and bf16 on inputs
of sizes 1, 3, 7 and 33, forward and backward, on the reference interpreter and compiled on the
simulator (frontend/nn/testdata/torch_odd, written by ` + "`scripts/torch_layers_reference.py --odd`" + `).
The two differ, within the dtype's tolerance, where they round differently:

- A layer here is a composite of ops and each op rounds its result to the dtype (above); PyTorch's
  CPU kernels compute a whole layer in float32 and round once. A hardswish or a layer norm in bf16
  therefore differs from PyTorch's by a few units in the last place, more where a sum cancels; the
  tests allow each element max(rel·|want|, rel·RMS(want), twice the element's error bound
  (internal/tolerance)), rel 2e-2 for f16 and bf16 (1e-5 for f32).
- Where PyTorch's CPU kernels do not take f16 (most of them in 1.13: convolutions, norms, pooling,
  interpolation, the activations) or bf16 (conv_transpose2d, hardtanh/relu6, mish), the reference is
  PyTorch in float32 on the f16 or bf16 values, its outputs and gradients rounded once: what a
  GPU's half-precision kernels compute internally.
- PyTorch's CPU upsample_bilinear2d in bf16 rounds its interpolation weights to bf16 (a gradient
  that is 1.5e-7 in float32 comes out 0.005); gcomp computes the weights in float64 and rounds the
  results, so the bilinear cases' bf16 references are computed in float32 like the unsupported ones.
- A window that holds its maximum twice (common in bf16) sends the gradient to the first in
  row-major order in max_pool2d and AdaptiveMaxPool2d, as PyTorch's index does; reduce_max (torch.amax)
  shares it among the ties.
- A clamp (relu6, hardtanh) at a bound of 0 keeps a -0 input's sign, as PyTorch's does.

Under autocast (` + "`gcomp train --amp`" + `, docs/training.md) the same tests hold a training step of the
layers with contractions and of the norms to PyTorch's values; with ` + "`--tf32`" + ` (PyTorch's
allow_tf32) the compiled layers, forward and backward, to PyTorch's float64 values within tf32's
tolerance (relative 5e-3): a tf32 tensor-core kernel rounds its operands to a 10-bit mantissa.
`
