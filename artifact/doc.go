// Package artifact defines what `gcomp build` writes and the runtime reads: a
// PTX module (model.ptx, loadable with cuModuleLoadData unchanged) and its
// launch plan (model.plan.json beside it).
//
// The launch plan is versioned JSON. It holds the memory plan of the passes
// (arena size, every intermediate buffer's offset and live range), the model's
// inputs, parameters and outputs with their types, the kernels in launch
// order with their grid, block, shared-memory size and one binding per .param
// of the entry, and the source graph in the .gir text form, so a runtime can
// initialize parameters and run the reference interpreter without the model's
// source. docs/artifact.md documents every field.
package artifact
