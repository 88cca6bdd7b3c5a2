package load

// maxBatchElsewhere says how a model of another format than .go bounds its batch.
func maxBatchElsewhere(ext string) string {
	switch ext {
	case ".onnx":
		return "bound an .onnx model's symbolic axes with --max-shape (onnx.Options.MaxShapes)"
	case ".gir":
		return "a .gir model declares its dims itself: dims { batch in [1,N] }"
	}
	return "this format has no batch to bound"
}
