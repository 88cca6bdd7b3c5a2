// Package reexec runs, for tests that need several processes, the test binary
// itself again as a child: its TestMain sees the variables the test set and
// plays its part instead of running the tests.
package reexec
