kernel __attribute__((reqd_work_group_size(16, 1, 1)))
void k(global ushort* A, global float* B) {
    if (get_local_id(0) == 0) B[0] = as_float((uint)A[0] << 16);  /* bf16 to f32 is exact */
}
