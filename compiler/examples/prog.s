# prog.s: out = relu(inp @ wgt.T) for a 4x4 int8 matrix on the tiny preset (a 1x4x4 GEMM core).
# Assemble with: vdla asm prog.s -o prog.bin --uops-out prog.uops --config tiny
#
# DRAM layout (byte offsets; each instruction's dram= counts elements of its memory type):
#   micro-ops   0 ..  15   (4 words of 4 B,   dram=0)
#   inputs    256 .. 271   (4 tiles of 4 B,   dram=64)
#   weights   512 .. 527   (1 tile of 16 B,   dram=32)
#   outputs   768 .. 783   (4 tiles of 4 B,   dram=192)
# The regions do not overlap, and the instruction stream can go anywhere from byte 1024 on.
LOAD UOP sram=0 dram=0 y=1 x=4 stride=4
LOAD INP sram=0 dram=64 y=1 x=4 stride=4
LOAD WGT sram=0 dram=32 y=1 x=1 stride=1 deps=push_next
GEMM reset uop=0:4 iter=1,1 dst=0,0 src=0,0 wgt=0,0
GEMM uop=0:4 iter=1,1 dst=0,0 src=0,0 wgt=0,0 deps=pop_prev
ALU MAX imm=0 uop=0:4 iter=1,1 dst=0,0 deps=push_next
STORE OUT sram=0 dram=192 y=1 x=4 stride=4 deps=pop_prev,push_prev
FINISH deps=pop_next

.uops
# accumulator row i = input row i times the weight tile
0 0 0
1 1 0
2 2 0
3 3 0
