// Swish: x * sigmoid(x), one thread per element.
extern "C" __global__ void swish(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] / (1.0f + expf(-x[i]));
}
