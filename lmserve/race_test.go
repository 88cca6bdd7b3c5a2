//go:build race

package lmserve

// raceEnabled: the tests run under the race detector (make test runs lmserve with -race -short).
const raceEnabled = true
