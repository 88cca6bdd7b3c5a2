//go:build !nocuda

package cuda

const nocuda = false
