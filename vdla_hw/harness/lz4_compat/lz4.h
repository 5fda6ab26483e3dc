// The two LZ4 functions Verilator's FST writer calls, for machines that have the LZ4
// runtime library (liblz4.so.1, present on most Linux systems) but not its development
// header. vdla_hw/harness/build.py puts this folder on the include path only when
// <lz4.h> is missing; with liblz4-dev installed the real header is used.
#pragma once
#ifdef __cplusplus
extern "C" {
#endif
int LZ4_compressBound(int inputSize);
int LZ4_compress_default(const char* src, char* dst, int srcSize, int dstCapacity);
#ifdef __cplusplus
}
#endif
