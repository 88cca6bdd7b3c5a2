package cuda

// Programmatic dependent launch (sm_90): a launch the plan marks PDL (artifact.Kernel.PDL, its
// entry written by codegen/ptx for the contract in pdl.go there) goes through cuLaunchKernelEx
// with CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION set, so the driver may start it
// while the kernel before it in the stream still runs, once every block of that one has executed
// griddepcontrol.launch_dependents; its griddepcontrol.wait then waits for that kernel's
// completion and memory. Captured into a CUDA graph, the launch keeps the attribute (the CUDA
// Programming Guide's PDL section describes PDL under stream capture). A launch without the
// attribute, or on a GPU before sm_90, serializes as any other: the wait then returns at once.

// DependentLauncher is implemented by drivers that make programmatic dependent launches:
// cuLaunchKernelEx with the one attribute programmaticStreamSerializationAllowed = 1, the other
// arguments as LaunchKernel's. A driver without it launches PDL kernels as any other.
type DependentLauncher interface {
	LaunchKernelDependent(f Function, grid, block [3]uint32, sharedBytes uint32, s Stream, params []uint64) error
}

// launchAttrProgrammaticStreamSerialization is CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION.
const launchAttrProgrammaticStreamSerialization = 6

// launchAttribute is cuda.h's CUlaunchAttribute: the id, padding to 8 bytes, and the 64-byte
// union CUlaunchAttributeValue, whose programmaticStreamSerializationAllowed is an int at its
// start.
type launchAttribute struct {
	id    uint32
	_     [4]byte
	value [64]byte
}

// launchConfig is cuda.h's CUlaunchConfig (CUDA 11.8): Go lays it out as C does (the stream
// handle at offset 32, 56 bytes in all).
type launchConfig struct {
	grid        [3]uint32
	block       [3]uint32
	sharedBytes uint32
	stream      uintptr
	attrs       *launchAttribute
	numAttrs    uint32
}

// dependentConfig is the cuLaunchKernelEx configuration of a programmatic dependent launch.
func dependentConfig(grid, block [3]uint32, sharedBytes uint32, s Stream) (*launchConfig, *launchAttribute) {
	attr := &launchAttribute{id: launchAttrProgrammaticStreamSerialization}
	attr.value[0] = 1 // int programmaticStreamSerializationAllowed = 1, little-endian
	return &launchConfig{grid: grid, block: block, sharedBytes: sharedBytes, stream: uintptr(s), attrs: attr, numAttrs: 1}, attr
}

// launch queues one kernel: a programmatic dependent launch when pdl asks for one and the
// device (sm_90 or later) and the driver can make it, an ordinary launch otherwise.
func (d *Device) launch(f Function, grid, block [3]uint32, sharedBytes uint32, params []uint64, pdl bool) error {
	if dl, ok := d.drv.(DependentLauncher); ok && pdl && d.info.Arch.Major >= 9 {
		return dl.LaunchKernelDependent(f, grid, block, sharedBytes, d.stream, params)
	}
	return d.drv.LaunchKernel(f, grid, block, sharedBytes, d.stream, params)
}
