kernel __attribute__((reqd_work_group_size(32, 1, 1)))
void k(char c, int v, global int* x) {
    if (c && get_local_id(0) == 0) *x = v;
}
