//go:build !race

package lmserve

const raceEnabled = false
