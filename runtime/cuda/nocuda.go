//go:build nocuda

package cuda

// nocuda reports that the build tag nocuda left the driver loader out.
const nocuda = true
