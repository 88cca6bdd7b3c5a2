package cuda

import (
	"fmt"
	"regexp"
	"strconv"
)

var (
	reTarget = regexp.MustCompile(`(?m)^[ \t]*\.target[ \t]+sm_(\d+)(a?)\b`)
	reEntry  = regexp.MustCompile(`(?m)^[ \t]*(?:\.visible[ \t]+|\.weak[ \t]+)?\.entry[ \t]+([A-Za-z_$%][\w$]*)`)
)

// Arch is a GPU architecture as PTX names it: sm_86 is {8, 6}.
type Arch struct {
	Major, Minor int
	Specific     bool // sm_90a: features of exactly this architecture
}

func (a Arch) String() string {
	s := fmt.Sprintf("sm_%d%d", a.Major, a.Minor)
	if a.Specific {
		s += "a"
	}
	return s
}

// less reports whether a is an older architecture than b.
func (a Arch) less(b Arch) bool {
	return a.Major < b.Major || a.Major == b.Major && a.Minor < b.Minor
}

// ptxTarget returns the architecture of the PTX module's .target directive.
func ptxTarget(ptx []byte) (Arch, bool) {
	m := reTarget.FindSubmatch(ptx)
	if m == nil {
		return Arch{}, false
	}
	n, err := strconv.Atoi(string(m[1]))
	if err != nil || n < 10 {
		return Arch{}, false
	}
	return Arch{Major: n / 10, Minor: n % 10, Specific: len(m[2]) > 0}, true
}

// ptxEntries lists the kernels (.entry functions) the module defines.
func ptxEntries(ptx []byte) []string {
	var names []string
	for _, m := range reEntry.FindAllSubmatch(ptx, -1) {
		names = append(names, string(m[1]))
	}
	return names
}
