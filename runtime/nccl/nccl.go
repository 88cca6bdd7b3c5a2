package nccl

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/gcomp/gcomp/internal/dynlib"
)

// LibraryEnv names the NCCL library to load when no path is given.
const LibraryEnv = "GCOMP_NCCL_LIB"

// DefaultLibrary is NCCL's name, searched for the way the dynamic loader
// searches (LD_LIBRARY_PATH, the ld.so cache, the system directories).
const DefaultLibrary = "libnccl.so.2"

// LibraryPath is the library Load opens for lib: lib itself if not empty,
// else $GCOMP_NCCL_LIB, else DefaultLibrary.
func LibraryPath(lib string) string { return dynlib.Path(lib, LibraryEnv, DefaultLibrary) }

// ErrNoLibrary is the error Load returns (wrapped, with the loader's message)
// when the library cannot be opened.
var ErrNoLibrary = errors.New("no NCCL library (libnccl.so.2) found; install NVIDIA's libnccl2 package (https://developer.nvidia.com/nccl) or name the library with --nccl-lib or $" + LibraryEnv)

// Result is an ncclResult_t.
type Result int32

// NCCL's results (nccl.h).
const (
	Success            Result = 0
	UnhandledCudaError Result = 1
	SystemError        Result = 2
	InternalError      Result = 3
	InvalidArgument    Result = 4
	InvalidUsage       Result = 5
	RemoteError        Result = 6
	InProgress         Result = 7
)

var resultNames = [...]string{"ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError",
	"ncclInternalError", "ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress"}

// String is the result's name in nccl.h.
func (r Result) String() string {
	if r >= 0 && int(r) < len(resultNames) {
		return resultNames[r]
	}
	return fmt.Sprintf("ncclResult(%d)", int32(r))
}

// Error is a failed NCCL call.
type Error struct {
	Call   string // the NCCL function, e.g. "ncclAllReduce"
	Result Result
	Text   string // ncclGetErrorString's text
	Detail string // ncclGetLastError's text, when the library has it and it says something
}

func (e *Error) Error() string {
	s := e.Call + ": " + e.Result.String()
	if e.Text != "" {
		s += ": " + e.Text
	}
	if e.Detail != "" {
		s += " (" + e.Detail + ")"
	}
	return s
}

// Is makes errors.Is(err, &Error{Result: r}) match any call failing with r.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Call == "" && t.Result == e.Result
}

// UniqueIDBytes is NCCL_UNIQUE_ID_BYTES.
const UniqueIDBytes = 128

// UniqueID is an ncclUniqueId: rank 0 makes it, every rank of the
// communicator receives it (over the rendezvous) and joins with it.
type UniqueID [UniqueIDBytes]byte

// DataType is an ncclDataType_t.
type DataType int32

// NCCL's data types (nccl.h).
const (
	Int8     DataType = 0
	Uint8    DataType = 1
	Int32    DataType = 2
	Uint32   DataType = 3
	Int64    DataType = 4
	Uint64   DataType = 5
	Float16  DataType = 6
	Float32  DataType = 7
	Float64  DataType = 8
	Bfloat16 DataType = 9
)

// RedOp is an ncclRedOp_t.
type RedOp int32

// NCCL's reduction operations (nccl.h). Avg needs NCCL 2.10 or newer.
const (
	Sum  RedOp = 0
	Prod RedOp = 1
	Max  RedOp = 2
	Min  RedOp = 3
	Avg  RedOp = 4
)

// cString is the text in b up to the first NUL.
func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}
