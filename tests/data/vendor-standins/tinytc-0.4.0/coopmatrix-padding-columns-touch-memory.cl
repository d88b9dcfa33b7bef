kernel __attribute__((reqd_work_group_size(16, 1, 1)))
void k(global float* A) {
    /* the 8 x 3 block of ones at (0, 0) of an 8 x 6 column-major matrix, nothing else */
    for (int t = get_local_id(0); t < 8 * 3; t += 16) A[t] = 1.0f;  /* column-major, lda 8 */
}
