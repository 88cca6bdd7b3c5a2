// Package nn holds the layers of PyTorch's torch.nn for the gcomp DSL (package frontend):
// Linear, Conv1d, Conv2d, ConvTranspose2d, MaxPool2d, AvgPool2d, AdaptiveAvgPool2d,
// AdaptiveMaxPool2d, Upsample, the activations (ReLU, ReLU6, Hardtanh, Hardswish, Hardsigmoid,
// LeakyReLU, ELU, Softplus, Mish, PReLU, GELU, SiLU, Sigmoid, Tanh), BatchNorm2d, BatchNorm1d,
// GroupNorm, InstanceNorm2d, LayerNorm, Dropout, Identity, Sequential, Embedding,
// MultiheadAttention, TransformerEncoderLayer, TransformerEncoder, RNNCell, LSTMCell, GRUCell,
// RNN, LSTM and GRU.
//
// A module with parameters is made by a constructor that takes the builder scope and the
// module's name, like an attribute assignment self.fc1 = nn.Linear(1568, 128) in PyTorch:
//
//	fc1 := nn.NewLinear(b, "fc1", 1568, 128) // parameters fc1.weight [128,1568], fc1.bias [128]
//	y := fc1.Forward(x)
//
// Parameter names, layouts and default initializers are PyTorch's, so a state_dict saved as
// safetensors loads without renaming: Linear's weight is [out, in]; LSTM's weight_ih_l0 stacks
// the gates i, f, g, o; TransformerEncoderLayer's attention weights are self_attn.in_proj_weight
// and so on. Optional arguments come in an options struct whose zero value means PyTorch's
// defaults: nn.NewConv2d(b, "conv1", 3, 16, 3, nn.Conv2dOptions{Padding: 1}). Modules without
// parameters are plain values: nn.ReLU{}, nn.MaxPool2d{KernelSize: 2}. Where PyTorch takes
// one number for a square size, so does a pair with only its first element: output_size=1 is
// nn.AdaptiveAvgPool2d{OutputSize: [2]int{1}} ({1, 1}), scale_factor=2 is
// nn.Upsample{ScaleFactor: [2]float64{2}}; a pair's second element of 0 copies the first.
//
// Your own modules are Go structs with a constructor and a Forward method; a submodule's scope
// is b.Sub(name):
//
//	type Block struct{ FC1, FC2 *nn.Linear }
//
//	func NewBlock(b *frontend.Builder, name string) *Block {
//		s := b.Sub(name)
//		return &Block{nn.NewLinear(s, "fc1", 64, 256), nn.NewLinear(s, "fc2", 256, 64)}
//	}
//
//	func (m *Block) Forward(x *frontend.Tensor) *frontend.Tensor {
//		return x.Add(m.FC2.Forward(m.FC1.Forward(x).Relu()))
//	}
//
// Sequential numbers its children as PyTorch does; build them with those names:
//
//	net := nn.NewSequential(nn.NewLinear(b, "0", 64, 32), nn.ReLU{}, nn.NewLinear(b, "2", 32, 10))
//
// The graphs are for inference (PyTorch's eval mode) unless built frontend.WithTraining:
// nn.Dropout and the dropout of MultiheadAttention, TransformerEncoderLayer (PyTorch's default
// 0.1 is accepted), RNN, LSTM and GRU pass their input through, BatchNorm normalizes with its
// running statistics (running_mean, running_var and num_batches_tracked are declared, so
// PyTorch's state_dict loads unchanged); in training mode the dropouts drop with Philox masks.
// Recurrent layers are unrolled over the fixed sequence length of their input. scripts/torch_layers_reference.py wrote
// PyTorch's values for every layer (testdata/torch), forward and backward.
package nn
