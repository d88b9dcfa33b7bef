"""Running OpenCL C on a device: device choice, build cache and launch, compiled kernels,
build logs, known device bugs, checks before a launch, isolation, guard zones, Oclgrind."""
