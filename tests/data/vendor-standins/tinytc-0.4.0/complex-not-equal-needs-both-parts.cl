kernel __attribute__((reqd_work_group_size(16, 1, 1)))
void k(global float2* A, global float2* B, global int* R) {
    for (long i = get_local_id(0); i < 4; i += 16) {
        float2 a = A[i], b = B[i];
        R[i] = (a.x != b.x || a.y != b.y) ? 1 : 0;
    }
}
