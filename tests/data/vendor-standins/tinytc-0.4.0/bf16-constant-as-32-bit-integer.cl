kernel __attribute__((reqd_work_group_size(16, 1, 1)))
void k(global ushort* A, global ushort* B) {
    if (get_local_id(0) == 0) {
        uint u = as_uint(as_float((uint)A[0] << 16) + 1.5f);
        u += 0x7fffu + ((u >> 16) & 1u);  /* round to nearest even bf16 */
        B[0] = (ushort)(u >> 16);
    }
}
