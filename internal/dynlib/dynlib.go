package dynlib

import (
	"os"
	"sync"
)

// Path is the library a loader opens: explicit if not empty, else the value of the environment
// variable env if set and not empty, else def.
func Path(explicit, env, def string) string {
	if explicit != "" {
		return explicit
	}
	if p := os.Getenv(env); p != "" {
		return p
	}
	return def
}

// Func is a C function to resolve: its exported name and a pointer to the Go function variable
// that calls it (a *func(...) as purego.RegisterFunc takes).
type Func struct {
	Name string
	Ptr  any
}

// Spec says how to open a library and what it must have.
type Spec struct {
	// Local opens the library with RTLD_LOCAL: its symbols do not resolve those of libraries
	// opened later. The default is RTLD_GLOBAL.
	Local bool
	// Required are the functions the library must have. Open fails at the first it lacks,
	// closing the library.
	Required []Func
	// Lacks is Open's error for a missing required function (it names the library and the
	// version needed); nil gives "PATH lacks SYMBOL".
	Lacks func(symbol string) error
	// Optional are groups of functions registered only when the library has every function of
	// the group; the variables of an incomplete group stay nil.
	Optional [][]Func
	// NoLibrary, when set, is wrapped by Open's error for a library that cannot be opened, in
	// front of the loader's message: "NoLibrary: loader's message".
	NoLibrary error
}

// Cache holds what a loader made of each library, so that a library is opened once per process.
// The zero Cache is ready to use.
type Cache[T any] struct {
	mu sync.Mutex
	m  map[string]T
}

// Get returns what is cached for key, else calls open, caching its result when it succeeds. The
// cache is locked while open runs: one library is opened at a time. A failed open gives the zero
// T and open's error, and is not cached: the next Get tries again.
func (c *Cache[T]) Get(key string, open func() (T, error)) (T, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.m[key]; ok {
		return v, nil
	}
	v, err := open()
	if err != nil {
		var zero T
		return zero, err
	}
	if c.m == nil {
		c.m = map[string]T{}
	}
	c.m[key] = v
	return v, nil
}
