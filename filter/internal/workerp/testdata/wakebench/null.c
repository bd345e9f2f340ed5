// The floor of BenchmarkCallbackWakeups: a hook that does nothing, in C.
void wakebench_hook(void) {}
