//go:build linux && (amd64 || arm64) && !nocuda

package dynlib

import (
	"errors"
	"strings"
	"testing"
)

// libm is the C math library, which every Linux machine with a dynamic loader has.
type libm struct {
	cos, sin, missing func(float64) float64
}

func TestOpen(t *testing.T) {
	if err := Unavailable("libm"); err != nil {
		t.Fatalf("Unavailable = %v in a build that opens libraries", err)
	}
	errLacks := errors.New("the caller's error")
	errNoLibrary := errors.New("no test library")
	for _, tc := range []struct {
		name    string
		path    string
		spec    func(*libm) Spec
		wantErr string // a prefix; "" for success
		wantIs  error  // an error the error wraps
		want    func(*libm) bool
	}{
		{
			name: "required", path: "libm.so.6",
			spec: func(l *libm) Spec {
				return Spec{Required: []Func{{Name: "cos", Ptr: &l.cos}, {Name: "sin", Ptr: &l.sin}}}
			},
			want: func(l *libm) bool { return l.cos(0) == 1 && l.sin(0) == 0 },
		},
		{
			name: "local", path: "libm.so.6",
			spec: func(l *libm) Spec { return Spec{Local: true, Required: []Func{{Name: "cos", Ptr: &l.cos}}} },
			want: func(l *libm) bool { return l.cos(0) == 1 },
		},
		{
			name: "missing required", path: "libm.so.6",
			spec: func(l *libm) Spec {
				return Spec{Required: []Func{{Name: "cos", Ptr: &l.cos}, {Name: "gcomp_no_such_function", Ptr: &l.missing}, {Name: "sin", Ptr: &l.sin}}}
			},
			wantErr: "libm.so.6 lacks gcomp_no_such_function",
			want:    func(l *libm) bool { return l.sin == nil && l.missing == nil },
		},
		{
			name: "missing required, the caller's error", path: "libc.so.6",
			spec: func(l *libm) Spec {
				return Spec{
					Required: []Func{{Name: "cos", Ptr: &l.cos}},
					Lacks: func(sym string) error {
						if sym != "cos" {
							t.Errorf("Lacks(%q), want cos", sym)
						}
						return errLacks
					},
				}
			},
			wantErr: errLacks.Error(),
		},
		{
			name: "optional group present", path: "libm.so.6",
			spec: func(l *libm) Spec {
				return Spec{Optional: [][]Func{{{Name: "cos", Ptr: &l.cos}, {Name: "sin", Ptr: &l.sin}}}}
			},
			want: func(l *libm) bool { return l.cos(0) == 1 && l.sin(0) == 0 },
		},
		{
			name: "optional group incomplete", path: "libm.so.6",
			spec: func(l *libm) Spec {
				return Spec{Optional: [][]Func{{{Name: "cos", Ptr: &l.cos}, {Name: "gcomp_no_such_function", Ptr: &l.missing}}, {{Name: "sin", Ptr: &l.sin}}}}
			},
			want: func(l *libm) bool { return l.cos == nil && l.missing == nil && l.sin(0) == 0 },
		},
		{
			name: "no such library", path: "/nonexistent/libgcomp-test.so.1",
			spec:    func(l *libm) Spec { return Spec{Required: []Func{{Name: "cos", Ptr: &l.cos}}} },
			wantErr: "/nonexistent/libgcomp-test.so.1: cannot open shared object file",
		},
		{
			name: "no such library, the caller's error", path: "/nonexistent/libgcomp-test.so.1",
			spec: func(l *libm) Spec {
				return Spec{Required: []Func{{Name: "cos", Ptr: &l.cos}}, NoLibrary: errNoLibrary}
			},
			wantErr: "no test library: /nonexistent/libgcomp-test.so.1: cannot open shared object file",
			wantIs:  errNoLibrary,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l libm
			err := Open(tc.path, tc.spec(&l))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Open: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.wantErr)):
				t.Fatalf("Open: %v, want an error starting with %q", err, tc.wantErr)
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Errorf("Open: %v, want it to wrap %v", err, tc.wantIs)
			}
			if tc.want != nil && !tc.want(&l) {
				t.Errorf("the functions registered are not the ones expected: %+v", l)
			}
		})
	}
}
