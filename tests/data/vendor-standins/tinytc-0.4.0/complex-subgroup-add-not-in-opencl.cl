kernel __attribute__((reqd_work_group_size(16, 1, 1)))
void k(global float2* A, global float2* B) {
    long i = get_local_id(0);
    float2 s = (float2)(0.0f, 0.0f);
    for (long k = 0; k <= i; ++k) s += A[k];  /* the inclusive scan over the sub-group */
    B[i] = s;
}
