package frontend

// SymbolizedAddresses is how many return addresses userFrame has symbolized so far.
func SymbolizedAddresses() int {
	n := 0
	pcVerdicts.Range(func(_, _ any) bool { n++; return true })
	return n
}
