// Routes Verilator's runtime printing (VL_PRINTF) through the harness, so a failed RTL
// assertion's message ("... Assertion failed in TOP.vdla_top.u_x.a_name: ...") reaches
// Python as the run's error instead of only the process's stdout.  verilated.h includes it
// in every compile of the harness build (build.py: -DVL_VERILATED_INCLUDE, Verilator's hook
// for a user header; a plain -include would stop GCC from using the precompiled header).
#pragma once

extern "C" int vdla_vl_printf(const char* format, ...);
#define VL_PRINTF vdla_vl_printf
