// Package autodiff is reverse-mode differentiation over the IR. Grad (and the lower-level Append)
// appends to a graph the nodes that compute the gradient of a scalar loss with respect to chosen
// parameters or inputs, so the backward pass is an ordinary graph: the reference interpreter runs
// it, and fusion, scheduling and memory planning treat it like any forward graph.
//
// Every op of the op table has a row in the rule table: a gradient rule, or the reason it has
// none (comparisons and logical ops produce bool; floor and ceil are stepwise; gather's indices
// are integers). Integer and bool values never carry gradients, so a graph may use comparisons,
// masks and integer casts freely; only a float path from a parameter through a
// non-differentiable argument into the loss is an error, and it names the op and the argument.
//
// Contractions stay contractions: the gradient of dot_general is two dot_generals (plus a
// transpose when the dim order needs one), the gradient of conv2d is two conv2ds (input gradient:
// a flipped-kernel convolution of the stride-dilated output gradient; weight gradient: a
// convolution of the input by the output gradient). The gradient of broadcast_in_dim is a
// reduce_sum; pooling gradients are strided slices, selects and pads. docs/training.md lists
// every rule.
package autodiff
