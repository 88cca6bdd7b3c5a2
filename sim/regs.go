package sim

import (
	"strconv"
	"strings"
)

// regTable maps a function's register names to their slots. A range
// declaration %r<N> is kept as one entry, not N names, so a module
// declaring millions of registers loads in time and memory proportional to
// its declarations.
type regTable struct {
	single map[string]regInfo
	ranges map[string]regRange // by prefix: %r<N> declares %r0 .. %r(N-1)
}

type regRange struct {
	base  int32 // slot of prefix0
	count int
	t     ptype
}

func newRegTable() *regTable {
	return &regTable{single: map[string]regInfo{}, ranges: map[string]regRange{}}
}

// get finds a register. A name ending in digits may belong to a range
// under any split of those digits (%r12 is %r<13>'s 12 or %r1<3>'s 2);
// declare rejects declarations under which two splits both hold.
func (rt *regTable) get(name string) (regInfo, bool) {
	if r, ok := rt.single[name]; ok {
		return r, true
	}
	if len(rt.ranges) == 0 {
		return regInfo{}, false
	}
	d := len(name)
	for d > 0 && name[d-1] >= '0' && name[d-1] <= '9' {
		d--
	}
	for i := d; i < len(name); i++ {
		if rg, ok := rt.ranges[name[:i]]; ok && index(name[i:], rg.count) {
			k, _ := strconv.Atoi(name[i:])
			return regInfo{rg.base + int32(k), rg.t}, true
		}
	}
	return regInfo{}, false
}

// declareOne adds one register named name at slot idx; it reports false
// if the name is taken.
func (rt *regTable) declareOne(name string, idx int32, t ptype) bool {
	if _, dup := rt.get(name); dup {
		return false
	}
	rt.single[name] = regInfo{idx, t}
	return true
}

// declareRange adds prefix0 .. prefix(n-1) at slots base ...; it returns a
// name that is already declared, or "".
func (rt *regTable) declareRange(prefix string, n int, base int32, t ptype) string {
	if _, dup := rt.ranges[prefix]; dup {
		return prefix + "0"
	}
	for name := range rt.single {
		if r, ok := strings.CutPrefix(name, prefix); ok && index(r, n) {
			return name
		}
	}
	// A range whose prefix extends this one by digits (or the reverse) may
	// share names: check the shorter prefix's names against the longer.
	for q, rg := range rt.ranges {
		short, shortN, long, longN := prefix, n, q, rg.count
		if len(q) < len(prefix) {
			short, shortN, long, longN = q, rg.count, prefix, n
		}
		ext, ok := strings.CutPrefix(long, short)
		if !ok || ext == "" || strings.Trim(ext, "0123456789") != "" {
			continue
		}
		for k := range shortN {
			if r, ok := strings.CutPrefix(strconv.Itoa(k), ext); ok && index(r, longN) {
				return short + strconv.Itoa(k)
			}
		}
	}
	rt.ranges[prefix] = regRange{base, n, t}
	return ""
}

// index reports whether digits name register k < n of a range: no sign, no
// leading zeros.
func index(digits string, n int) bool {
	if digits == "" || len(digits) > 1 && digits[0] == '0' || strings.Trim(digits, "0123456789") != "" {
		return false
	}
	k, err := strconv.Atoi(digits)
	return err == nil && k < n
}
