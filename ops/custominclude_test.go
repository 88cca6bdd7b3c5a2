package ops

import (
	"fmt"
	"strings"
	"testing"
)

func TestDirectives(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"#include \"a.h\"\nint x;\n  #  include <b.h>\n", `1-1 include "a.h" [a.h "" true]; 3-3 include <b.h> [b.h angle true]`},
		{"#inc\\\nlude \"c.h\"\n", `1-2 include "c.h" [c.h "" true]`},
		{"/* #include \"no.h\"\n#include \"no2.h\" */\n", ""},
		{"/* c\n */ #include \"g.h\"\n", `2-2 include "g.h" [g.h "" true]`}, // a comment is a space: the line is a directive
		{"x = \"/*\";\n#include \"yes.h\"\n", `2-2 include "yes.h" [yes.h "" true]`},
		{"/**/ #include \"d.h\" // c\n", `1-1 include "d.h" [d.h "" true]`},
		{"%:include HDR\n#pragma once\n#define X 1\n", `1-1 include HDR [ "" false]; 2-2 pragma once; 3-3 define X 1`},
		{"#include_next <e.h>\n#import \"f.h\"\n", `1-1 include_next <e.h> [e.h angle true]; 2-2 import "f.h" [f.h "" true]`},
	} {
		var got []string
		for _, d := range Directives(tc.src) {
			s := fmt.Sprintf("%d-%d %s %s", d.Line, d.EndLine, d.Keyword, d.Rest)
			if d.ReadsFile() {
				name, angle, ok := d.Include()
				a := `""`
				if angle {
					a = "angle"
				}
				s += fmt.Sprintf(" [%s %s %v]", name, a, ok)
			}
			got = append(got, s)
		}
		if g := strings.Join(got, "; "); g != tc.want {
			t.Errorf("%q:\n got %s\nwant %s", tc.src, g, tc.want)
		}
	}
}

func FuzzDirectives(f *testing.F) {
	f.Add("#include \"a.h\"\n/* x\n#include <b> */ %:include \\\n\"c\"\n")
	f.Add("'\\\n\"/*\"#\n")
	f.Fuzz(func(t *testing.T, src string) {
		n := strings.Count(src, "\n") + 1
		for _, d := range Directives(src) {
			if d.Line < 1 || d.EndLine < d.Line || d.EndLine > n {
				t.Fatalf("directive at lines %d-%d of %d", d.Line, d.EndLine, n)
			}
			d.Include() // must not panic
		}
	})
}
