/* fake_libtorch_cpu.c: an empty library named libtorch_cpu.so, loaded by the fake torch of
 * tests/torch_fake (test_record_torch_hook.sh), so that strobe record sees torch loaded. */
int fake_libtorch_cpu(void);
int fake_libtorch_cpu(void) {
    return 0;
}
