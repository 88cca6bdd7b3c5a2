// Swish (SiLU), y = x * sigmoid(x), fused into one pass over memory:
// one thread per element, n elements.
extern "C" __global__ void swish(const float* __restrict__ x, float* __restrict__ y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    y[i] = v / (1.0f + __expf(-v));
  }
}
