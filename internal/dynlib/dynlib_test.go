package dynlib

import (
	"errors"
	"testing"
)

func TestPath(t *testing.T) {
	const env = "GCOMP_DYNLIB_TEST_LIB"
	for _, tc := range []struct {
		name, explicit, env, def, want string
	}{
		{"default", "", "", "libx.so.1", "libx.so.1"},
		{"environment", "", "/opt/env/libx.so", "libx.so.1", "/opt/env/libx.so"},
		{"explicit over environment", "/y/libx.so", "/opt/env/libx.so", "libx.so.1", "/y/libx.so"},
		{"explicit", "/y/libx.so", "", "libx.so.1", "/y/libx.so"},
		{"no default", "", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(env, tc.env)
			if got := Path(tc.explicit, env, tc.def); got != tc.want {
				t.Errorf("Path(%q, $%s=%q, %q) = %q, want %q", tc.explicit, env, tc.env, tc.def, got, tc.want)
			}
		})
	}
}

func TestCache(t *testing.T) {
	var c Cache[*int]
	opens := 0
	one := func() (*int, error) { opens++; v := opens; return &v, nil }
	fail := func() (*int, error) { opens++; return nil, errors.New("no library") }

	a, err := c.Get("a", one)
	if err != nil || *a != 1 {
		t.Fatalf("first Get = %v, %v", a, err)
	}
	if again, err := c.Get("a", one); err != nil || again != a {
		t.Errorf("second Get of a key = %v, %v; want the cached %p", again, err, a)
	}
	if _, err := c.Get("b", fail); err == nil {
		t.Fatal("a failed open gave no error")
	}
	b, err := c.Get("b", one) // a failure is not cached
	if err != nil || *b != 3 {
		t.Errorf("Get after a failure = %v, %v; want a new open", b, err)
	}
	if opens != 3 {
		t.Errorf("%d opens, want 3", opens)
	}
}
