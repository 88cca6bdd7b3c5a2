//go:build linux && (amd64 || arm64) && !nocuda

package nccl

import (
	"fmt"
	"runtime"

	"github.com/gcomp/gcomp/internal/dynlib"
)

var loaded dynlib.Cache[*Library] // by the path given to dlopen

// openLibrary opens the library at path (a file name is searched for the way
// the dynamic loader searches) and resolves every function.
func openLibrary(path string) (*Library, error) {
	return loaded.Get(path, func() (*Library, error) {
		l := &Library{path: path}
		optional := [][]dynlib.Func{
			{{Name: "ncclGetLastError", Ptr: &l.ncclGetLastError}},
			{{Name: "ncclCommInitRankScalable", Ptr: &l.ncclCommInitRankScalable}},
		}
		if runtime.GOARCH == "arm64" {
			optional = append(optional, []dynlib.Func{{Name: "ncclCommInitRank", Ptr: &l.ncclCommInitRankPtr}})
		}
		return l, dynlib.Open(path, dynlib.Spec{
			Required:  l.symbols(),
			Optional:  optional,
			NoLibrary: ErrNoLibrary,
			Lacks: func(sym string) error {
				return fmt.Errorf("the NCCL library %s lacks %s (gcomp needs NCCL 2.10 or newer)", path, sym)
			},
		})
	})
}
