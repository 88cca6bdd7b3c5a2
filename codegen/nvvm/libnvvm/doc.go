// Package libnvvm calls NVIDIA's libNVVM (the NVVM IR to PTX compiler of the CUDA toolkit)
// through purego: no cgo, and a binary that runs where the library is absent until it is asked
// for.
//
//	lib, err := libnvvm.Load("")                  // see Candidates for where it looks
//	ptx, err := lib.Compile("k0_add", ir, "-arch=compute_80")
//
// Load looks in the explicit path (the --nvvm-lib flag), then $GCOMP_NVVM_LIB, then the CUDA
// toolkit ($CUDA_HOME or /usr/local/cuda, nvvm/lib64/libnvvm.so), then Debian's libnvvm4
// (/usr/lib/x86_64-linux-gnu/libnvvm.so.4), then .cache/nvvm at or above the working directory
// (where scripts/fetch-cuda-tools.sh --nvvm unpacks it). Without a library the error says where
// it looked and how to install one. Tests call Require, which skips when the library is missing
// unless GCOMP_REQUIRE_PTXAS=1.
package libnvvm
