package ptxas

import (
	"errors"
	"regexp"
	"strconv"
)

// cacheDirs12 is where scripts/fetch-cuda-tools.sh --cuda12 leaves CUDA
// 12.4's ptxas (from Debian trixie), relative to the module root.
var cacheDirs12 = []string{".cache/cuda12/bin"}

// Find12 returns the path of CUDA 12.4's ptxas: $GCOMP_PTXAS12 if set, else
// .cache/cuda12/bin under the module root. PATH is not searched: a ptxas
// there is of unknown version.
func Find12() (string, error) {
	if p, ok, err := fromEnv("GCOMP_PTXAS12"); ok {
		return p, err
	}
	if p, ok := inCache(cacheDirs12); ok {
		return p, nil
	}
	return "", errors.New("ptxas 12.4: not found in $GCOMP_PTXAS12 or .cache/cuda12; run scripts/fetch-cuda-tools.sh --cuda12")
}

// Assemble12 is Assemble with CUDA 12.4's ptxas whatever the target.
func Assemble12(ptx []byte, arch string) (*Result, error) {
	bin, err := Find12()
	if err != nil {
		return nil, err
	}
	res, _, err := assembleWith(bin, ptx, arch)
	return res, err
}

// max11 is the newest PTX ISA version CUDA 11.8's ptxas accepts.
const max11 = 78

var reVersion = regexp.MustCompile(`(?m)^\s*\.version\s+(\d+)\.(\d+)`)

// Needs12 reports whether only CUDA 12's ptxas can assemble ptx for arch:
// targets 11.8 does not know (sm_90a), sm_89 (its fp8 cvt needs PTX ISA 8.1)
// and any PTX whose .version is above 7.8.
func Needs12(ptx []byte, arch string) bool {
	if arch == "sm_89" || arch == "sm_90a" {
		return true
	}
	m := reVersion.FindSubmatch(ptx)
	if m == nil {
		return false
	}
	major, _ := strconv.Atoi(string(m[1]))
	minor, _ := strconv.Atoi(string(m[2]))
	return major*10+minor > max11
}
