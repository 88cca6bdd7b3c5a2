package autodiff

func init() {
	rules["dequantize"] = none("the quantized weight is integers and carries no gradient; its scale and zero points are "+
		"constants of a trained model here (quantization-aware training of the scale is not written)", 0, 1, 2)
}
