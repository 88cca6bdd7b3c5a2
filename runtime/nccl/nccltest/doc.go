// Package nccltest builds, for tests, a stand-in for libnccl.so.2 from C
// (testdata/stubnccl.c): nccl.h's entry points over host memory, recording each call.
package nccltest
