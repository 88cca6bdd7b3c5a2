// Package train compiles a training step into one graph: forward, backward (package
// passes/autodiff) and the optimizer update, with optional mixed precision and dynamic loss
// scaling, so that a device runs a whole step as one artifact.
//
// The step graph takes the batch and the state as inputs and the model's parameters as
// parameters, and returns the loss, the updated parameters ("new.<name>") and the updated state;
// StateBindings says which output replaces which input at the next step. RefTrainer and RunRef
// run steps on the reference interpreter. docs/training.md describes the formulas and
// conventions.
package train
