package lmtest

import (
	"fmt"
)

// Num reads a number field of a config.json map.
func Num(cfg map[string]any, key string) float64 {
	v, ok := cfg[key].(float64)
	if !ok {
		panic(fmt.Sprintf("lmtest: config field %s is %v", key, cfg[key]))
	}
	return v
}

// Int reads an integer field, def when absent.
func Int(cfg map[string]any, key string, def int) int {
	if _, ok := cfg[key]; !ok {
		return def
	}
	return int(Num(cfg, key))
}

// Bool reads a boolean field, false when absent.
func Bool(cfg map[string]any, key string) bool {
	v, _ := cfg[key].(bool)
	return v
}
