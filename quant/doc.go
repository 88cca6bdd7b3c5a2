// Package quant reads and writes weight-only quantized linear layers in the layouts Hugging Face
// checkpoints store them in, and quantizes float weights by rounding to nearest.
//
// # Layouts
//
// A linear layer y = x·Wᵀ has N outputs and K inputs (nn.Linear's weight is [N, K]). Its weights
// are integers q in [0, 2^bits) with, per output channel n and group g of input channels, an f16
// scale s and an integer zero point z. Two layouts are read:
//
// GPTQ (AutoGPTQ, transformers' GPTQ integration; quant_method "gptq", bits 4 or 8):
//
//	qweight int32 [K·bits/32, N]   packed along K: q[k, n] is bits (k mod 32/bits)·bits of qweight[k/(32/bits), n]
//	qzeros  int32 [G, N·bits/32]   packed along N the same way, each stored minus one (the classic format)
//	scales  f16   [G, N]
//	g_idx   int32 [K]              the group of input channel k; with act-order (desc_act) it is not k/group_size
//
// AWQ (AutoAWQ's GEMM kernels; quant_method "awq", version "gemm", bits 4):
//
//	qweight int32 [K, N·bits/32]   packed along N, eight nibbles in the order AWQ_ORDER = [0, 2, 4, 6, 1, 3, 5, 7]:
//	                               nibble i of qweight[k, c] is q[k, 8c + AWQ_ORDER[i]]
//	qzeros  int32 [G, N·bits/32]   packed like qweight, stored as they are
//	scales  f16   [G, N]
//
// where G = ceil(K / group_size), or 1 when group_size is -1 (one group per output channel).
//
// # The canonical form
//
// Both unpack into one Layer, output-major as nn.Linear stores weights:
//
//	Q      uint8   [N, K]  Q[n·K + k]
//	Scales float32 [N, G]  the f16 scale, exactly
//	Zeros  uint8   [N, G]  the zero point itself (GPTQ's stored value plus one)
//	Group  int32   [K]     the group of each input channel
//
// Dequantize computes w[n, k] = (float32(q) − float32(z)) · s in float32, with z and s those of
// group Group[k] of row n, as the published kernels do (AutoGPTQ's and AutoAWQ's reference paths
// subtract the zero in integers and multiply by the scale once), so the result is bit-exact
// against PyTorch's (q − z).float() · s.float(). The product of an f16 scale (11 significant bits)
// and an integer below 256 is exact in float32, so a kernel computing it in f16 gets this value
// rounded once to f16.
//
// Every size read from a file is checked before anything is allocated from it: shapes against
// the config's N, K, bits and group size, packed sizes exactly, g_idx in range. Each error is one
// line naming the file, the tensor and the field:
//
//	quant: model.safetensors: tensor "model.layers.0.mlp.up_proj.g_idx": element 17 is group 9, outside [0, 2)
package quant
