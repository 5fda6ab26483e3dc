// Routes Verilator's runtime printing (VL_PRINTF) through the harness, so a failed RTL
// assertion's message ("... Assertion failed in TOP.vdla_top.u_x.a_name: ...") reaches
// Python as the run's error instead of only the process's stdout.  Force-included into
// every compile of the harness build (build.py: -include vl_print_hook.h).
#pragma once

extern "C" int vdla_vl_printf(const char* format, ...);
#define VL_PRINTF vdla_vl_printf
