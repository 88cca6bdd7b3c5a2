// Package data reads training data and hands it out in batches: the Dataset interface (a number
// of rows; the inputs and targets of some rows) that a program implements for its own data; the
// package's implementations, Images (the IDX files of MNIST and Fashion-MNIST) and Tensors (read
// from .npy files, an .npz archive or a CSV file); and a Loader that hands any Dataset out in
// shuffled batches prepared in the background, PyTorch's DataLoader for gcomp.
//
//	train, test, err := data.FashionMNIST("") // Debian's dataset-fashion-mnist files
//	loader := &data.Loader{Data: train, Batch: 64, Shuffle: true, Seed: 1, DropLast: true}
//	for epoch := 1; epoch <= 3; epoch++ {
//		for b, err := range loader.Epoch(epoch) {
//			if err != nil {
//				return err
//			}
//			// b.X is f32[64,1,28,28] in [0,1], b.Y is i64[64]
//		}
//	}
//
// IDX files: the magic number 00 00 TYPE NDIM, NDIM big-endian uint32 dimensions, then the
// elements, big-endian and row-major. All six element types are read (u8, i8, i16, i32, f32,
// f64), plain or gzip-compressed (recognized by content, not by name). Readers validate the
// header, the element type, the data length (neither short nor long) and the gzip checksum, and
// allocate as they read, so a header that promises more than the file holds costs nothing.
// Errors are one line, prefixed "data: " and the file name:
//
//	data: train-images-idx3-ubyte.gz: truncated data: u8[60000 28 28] needs 47040000 bytes, have 1000
//
// ReadNPYDir, ReadNPZFile and ReadCSVFile read the user's data; their errors name the file and
// the row (a CSV file's line, an archive's member):
//
//	data: houses.csv:17: 3 fields, the header has 4
//
// The Loader's shuffle is deterministic per (seed, epoch) and documented exactly in
// Loader.Order, so another program can replay the same data order.
package data
