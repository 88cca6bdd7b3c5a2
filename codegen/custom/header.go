package custom

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// MaxPTXVersion is the newest PTX ISA a custom kernel may declare: CUDA 11.8's, which gcomp's
// modules declare, its ptxas assembles and the simulator reads.
const MaxPTXVersion = "7.8"

// knownTargets are the architectures PTX ISA 7.8 knows (sm_90a and later need newer PTX).
var knownTargets = []int{10, 11, 12, 13, 20, 21, 30, 32, 35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90}

// targetOptions are the other words a .target directive may hold.
var targetOptions = []string{"texmode_unified", "texmode_independent", "debug", "map_f64_to_f32"}

var (
	reVersionLine = regexp.MustCompile(`(?m)^\s*\.version\s+(\S+)`)
	reTargetLine  = regexp.MustCompile(`(?m)^\s*\.target\s+([^\n/]*)`)
)

// checkHeader checks a unit's .version and .target against what a module for sm_<sm> can hold:
// a PTX ISA no newer than MaxPTXVersion, an architecture that exists, and none newer than the
// build's (the module is assembled for sm_<sm>).
func checkHeader(ptx string, sm int) error {
	m := reVersionLine.FindStringSubmatch(ptx)
	if m == nil {
		return fmt.Errorf("its PTX has no .version")
	}
	major, minor, ok := parseVersion(m[1])
	if !ok {
		return fmt.Errorf("its PTX declares .version %s, not a PTX ISA version (MAJOR.MINOR)", m[1])
	}
	maxMajor, maxMinor, _ := parseVersion(MaxPTXVersion)
	if major > maxMajor || major == maxMajor && minor > maxMinor {
		return fmt.Errorf("its PTX declares .version %s, newer than PTX %s, the ISA gcomp targets (CUDA 11.8)", m[1], MaxPTXVersion)
	}
	t := reTargetLine.FindStringSubmatch(ptx)
	if t == nil {
		return fmt.Errorf("its PTX has no .target")
	}
	var arch int
	for i, w := range strings.Split(strings.TrimSuffix(strings.TrimSpace(t[1]), ";"), ",") {
		w = strings.TrimSpace(w)
		if i > 0 {
			if !slices.Contains(targetOptions, w) {
				return fmt.Errorf("its PTX declares .target %s: %q is not a .target option (%s)", strings.TrimSpace(t[1]), w, strings.Join(targetOptions, ", "))
			}
			continue
		}
		n, err := strconv.Atoi(strings.TrimPrefix(w, "sm_"))
		if !strings.HasPrefix(w, "sm_") || err != nil || !slices.Contains(knownTargets, n) {
			return fmt.Errorf("its PTX declares .target %s, which is not a GPU architecture PTX %s knows (sm_%s)", w, MaxPTXVersion, joinInts(knownTargets, ", sm_"))
		}
		arch = n
	}
	if arch > sm {
		return fmt.Errorf("its PTX targets sm_%d, newer than the build's sm_%d (build with --target sm_%d, or declare .target sm_%d)", arch, sm, arch, sm)
	}
	return nil
}

func parseVersion(s string) (major, minor int, ok bool) {
	a, b, found := strings.Cut(s, ".")
	ma, err1 := strconv.Atoi(a)
	mi, err2 := strconv.Atoi(b)
	if !found || err1 != nil || err2 != nil || ma < 0 || mi < 0 || len(a) > 3 || len(b) > 3 {
		return 0, 0, false
	}
	return ma, mi, true
}

func joinInts(v []int, sep string) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, sep)
}
