// Package tensorio reads and writes tensors in the two interchange formats the
// project meets: NumPy's .npy files and Hugging Face's safetensors files.
//
// Both formats are read into the same plain value, an [Array]: a dtype name, a
// shape and the raw element bytes, little-endian and in C (row-major) order:
//
//	a := &tensorio.Array{DType: "f32", Shape: []int{2, 3}, Data: make([]byte, 2*3*4)}
//	err := tensorio.WriteNPYFile("x.npy", a)
//
// The dtype names are the project's: f32, f16, bf16, f64, i32, u32, i64, i8,
// u8 and bool (one byte, 0 or 1).
//
// Readers accept every input without panicking and validate sizes before they
// allocate, so a corrupt or hostile file costs no more memory than its own
// length. Errors are one line, prefixed "tensorio: " and the file name when
// there is one:
//
//	tensorio: x.npy: truncated data: want 3136 bytes, have 100
//
// NumPy files: format versions 1.0, 2.0 and 3.0 are read; big-endian data is
// converted to little-endian and Fortran-ordered data is transposed to C
// order. Writers emit version 1.0 (2.0 when the header needs it), C order,
// little-endian. bf16 has no NumPy dtype and cannot be written to .npy.
//
// Safetensors files: the header is validated completely (length, JSON,
// duplicate names, dtypes, shapes, offsets that must tile the data section
// exactly). OpenSafetensorsFile opens a file too large to hold twice: the
// same header validation, the file mapped read-only (read on request where
// the system has no mmap), each tensor viewed when asked for. Writers are deterministic: tensors sorted by name, data in that
// order, header padded with spaces to a multiple of 8 bytes.
//
// The *File writers are atomic: they write a temporary file in the target
// directory and rename it, leaving nothing behind on failure; WriteFileAtomic
// offers the same to other writers. Only a regular file (or nothing) is
// replaced: a symbolic link is followed to its target, a character device or
// named pipe (/dev/null, /dev/stdout) is written in place, and a directory,
// socket or block device is refused.
//
// Names read from files (a plan's output names, safetensors keys) pass
// CheckFileName before they become file names.
package tensorio
