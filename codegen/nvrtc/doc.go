// Package nvrtc compiles CUDA C to PTX with NVIDIA's runtime compiler,
// libnvrtc, loaded at run time through purego (no cgo). It is what turns the
// source of a model's custom op (ops class "custom") into PTX at build time.
//
//	c, err := nvrtc.Open("")                  // finds libnvrtc (see Find)
//	ptx, err := c.Compile(src, "swish.cu", "compute_80")
//	// ptx: ".version 7.8\n.target sm_80\n.address_size 64\n.visible .entry swish(..."
//
// The library is looked up in --nvrtc-lib (the path given to Open),
// $GCOMP_NVRTC_LIB, the CUDA toolkit's lib64 ($CUDA_HOME, /usr/local/cuda),
// Debian's path (package libnvrtc11.2) and .cache/nvrtc under the module root
// (where scripts/fetch-cuda-tools.sh --nvrtc unpacks it). NVRTC needs its builtins library
// (libnvrtc-builtins); Open loads it first, with RTLD_GLOBAL, from the same
// directory.
//
// Compile always passes -lineinfo, so the PTX carries .loc lines that point at
// the user's .cu file, and caches its result per process by (source hash,
// file name, architecture): a model with the same kernel twice compiles it
// once. Compile errors are NVRTC's log, whose lines read
// "swish.cu(3): error: identifier "x" is undefined"; Errors turns them into
// "swish.cu:3: error: ..." lines.
//
// Tests call Require, which skips when the library is missing unless
// GCOMP_REQUIRE_PTXAS=1 demands it (as CI does).
package nvrtc
