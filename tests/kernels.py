"""Kernels several test modules share (one copy each)."""

# The spec's sample kernel, verbatim (spans in the tests refer to this exact text).
SAMPLE = """\
func @fused_kernel(%alpha: f32,
                   %A: group<memref<f32x16x8>>,
                   %B: memref<f32x8x8>,
                   %C: memref<f32x8x16>,
                   %D: memref<f32x16x16x?>) {
  %0 = group_id
  %1 = load %A[%0] : group<memref<f32x16x8>> ; Returns memref<f32x16x8>
  %2 = subview %D[:,:,%0] : memref<f32x16x16x?> ; Returns memref<f32x16x16>
  %tmp0 = alloca -> memref<f32x16x8>
  gemm.n.t 1.0, %1, %B, 0.0, %tmp0
    : f32, memref<f32x16x8>, memref<f32x8x8>, f32, memref<f32x16x8>
  gemm.n.n %alpha, %tmp0, %C, 1.0, %2
    : f32, memref<f32x16x8>, memref<f32x8x16>, f32, memref<f32x16x16>
}
"""
