# VDLA on a Zynq board: the Vivado batch-mode build of one project folder (one board, one config).
#
#   cd <project folder> && vivado -mode batch -source build.tcl
#
# `vdla fpga build --board B --config C -o <project folder>` writes the folder: this script (common
# to every Zynq board), board.tcl (the board's part and processing system, generated from the board
# table in vdla_hw/fpga/boards.py), params.tcl (the config's sources, clock, bus width and the
# register map of vdla_hw/regmap.py, generated) and src/ (the RTL, the config's vdla_pkg and the
# Verilog wrapper). No constant of the design is written here: they all come from those two files.
#
# Outputs in out/: vdla.bit + vdla.hwh (the pair pynq's Overlay loads), vdla.xsa, utilization.rpt,
# timing_summary.rpt and summary.txt (key/value lines `vdla fpga build` reads back).
# VDLA_VIVADO_JOBS in the environment sets the parallel jobs of each run (default 2).

set vdla_dir [file dirname [file normalize [info script]]]
source [file join $vdla_dir board.tcl]
source [file join $vdla_dir params.tcl]
set out_dir [file join $vdla_dir out]
file mkdir $out_dir
set jobs 2
if {[info exists ::env(VDLA_VIVADO_JOBS)]} { set jobs $::env(VDLA_VIVADO_JOBS) }

# A run that stopped short of 100% failed: say which and where its log is, and stop the build.
proc vdla_check_run {name} {
    set run [get_runs $name]
    if {[get_property PROGRESS $run] ne "100%"} {
        error "VDLA: Vivado run $name failed ([get_property STATUS $run]); see [get_property DIRECTORY $run]/runme.log"
    }
}

# ---- project and sources -------------------------------------------------------------------------
create_project -force vdla [file join $vdla_dir vivado] -part $vdla_part
# The board files give the PS its DDR and MIO preset; without them the part alone still builds a
# bitstream (pynq applies the PS clocks from the .hwh), but the PS preset is Vivado's default.
set board_part [lindex [get_board_parts -quiet -latest_file_version $vdla_board_part_pattern] 0]
if {$board_part ne ""} {
    set_property board_part $board_part [current_project]
    set preset 1
} else {
    puts "WARNING: VDLA: no Vivado board files match $vdla_board_part_pattern; building for part $vdla_part without the board's PS preset"
    set preset 0
}
set sources {}
foreach f $vdla_rtl_sources { lappend sources [file join $vdla_dir $f] }
add_files -norecurse -fileset sources_1 $sources
update_compile_order -fileset sources_1

# ---- block design: PS, accelerator, reset, two SmartConnects ------------------------------------
create_bd_design vdla_bd
set ps [create_bd_cell -type ip -vlnv xilinx.com:ip:$vdla_ps_ip ps]
set auto [list apply_board_preset $preset]
if {[llength $vdla_ps_external]} { lappend auto make_external [join $vdla_ps_external ", "] }
apply_bd_automation -rule $vdla_ps_rule -config $auto $ps
set props [list CONFIG.$vdla_ps_clock_prop $vdla_clock_mhz CONFIG.$vdla_ps_hp_width_prop $vdla_hp_width]
foreach {key value} $vdla_ps_enable { lappend props CONFIG.$key $value }
set_property -dict $props $ps
# The PS divides a PLL by integers: the fabric clock may differ from the request. Timing is closed
# at the actual frequency; the cycle model's clock_mhz should match it.
set clock_actual [get_property CONFIG.$vdla_ps_actual_clock_prop $ps]
puts "VDLA: fabric clock requested $vdla_clock_mhz MHz, the PS gives $clock_actual MHz"

set accel [create_bd_cell -type module -reference $vdla_wrapper_top vdla]
# The build id of bitstream.json: the driver reads it back from the BUILD_ID register.
set_property CONFIG.BUILD_ID $vdla_build_id $accel
set rst [create_bd_cell -type ip -vlnv xilinx.com:ip:proc_sys_reset rst]
# SmartConnects convert the protocol (GP/HP ports of the Zynq-7000 are AXI3), the data width and
# (control side) AXI4 to AXI4-Lite.
set ctrl_ic [create_bd_cell -type ip -vlnv xilinx.com:ip:smartconnect ctrl_ic]
set mem_ic [create_bd_cell -type ip -vlnv xilinx.com:ip:smartconnect mem_ic]
set_property -dict [list CONFIG.NUM_SI 1 CONFIG.NUM_MI 1] $ctrl_ic
set_property -dict [list CONFIG.NUM_SI 1 CONFIG.NUM_MI 1] $mem_ic

connect_bd_intf_net [get_bd_intf_pins ps/$vdla_ps_gp_intf] [get_bd_intf_pins ctrl_ic/S00_AXI]
connect_bd_intf_net [get_bd_intf_pins ctrl_ic/M00_AXI] [get_bd_intf_pins vdla/$vdla_ctrl_intf]
connect_bd_intf_net [get_bd_intf_pins vdla/$vdla_mem_intf] [get_bd_intf_pins mem_ic/S00_AXI]
connect_bd_intf_net [get_bd_intf_pins mem_ic/M00_AXI] [get_bd_intf_pins ps/$vdla_ps_hp_intf]
connect_bd_net [get_bd_pins ps/$vdla_ps_clk_pin] [get_bd_pins ps/$vdla_ps_gp_aclk_pin] \
    [get_bd_pins ps/$vdla_ps_hp_aclk_pin] [get_bd_pins vdla/clk] [get_bd_pins ctrl_ic/aclk] \
    [get_bd_pins mem_ic/aclk] [get_bd_pins rst/slowest_sync_clk]
connect_bd_net [get_bd_pins ps/$vdla_ps_rstn_pin] [get_bd_pins rst/ext_reset_in]
connect_bd_net [get_bd_pins rst/peripheral_aresetn] [get_bd_pins vdla/rst_n] \
    [get_bd_pins ctrl_ic/aresetn] [get_bd_pins mem_ic/aresetn]
connect_bd_net [get_bd_pins vdla/irq] [get_bd_pins ps/$vdla_ps_irq_pin]

# ---- address map: the registers at the board's base, DRAM wherever the HP port sees it ---------
foreach {name offset} $vdla_registers {
    if {$offset + 4 > $vdla_reg_range} { error "VDLA: register $name at $offset is outside the $vdla_reg_range-byte window" }
}
assign_bd_address -offset $vdla_reg_base -range $vdla_reg_range \
    -target_address_space [get_bd_addr_spaces ps/$vdla_ps_address_space] \
    [get_bd_addr_segs vdla/$vdla_ctrl_intf/reg0] -force
assign_bd_address -target_address_space [get_bd_addr_spaces vdla/$vdla_mem_intf]
validate_bd_design
save_bd_design

set bd_file [get_files vdla_bd.bd]
generate_target all $bd_file
add_files -norecurse [make_wrapper -files $bd_file -top]
set_property top vdla_bd_wrapper [current_fileset]
update_compile_order -fileset sources_1

# ---- synthesis, implementation, bitstream -------------------------------------------------------
launch_runs synth_1 -jobs $jobs
wait_on_run synth_1
vdla_check_run synth_1
launch_runs impl_1 -to_step write_bitstream -jobs $jobs
wait_on_run impl_1
vdla_check_run impl_1

# ---- reports and the files pynq needs ----------------------------------------------------------
open_run impl_1
report_utilization -file [file join $out_dir utilization.rpt]
report_timing_summary -max_paths 10 -file [file join $out_dir timing_summary.rpt]
set wns [get_property SLACK [get_timing_paths -max_paths 1 -nworst 1 -setup]]
file copy -force [file join [get_property DIRECTORY [get_runs impl_1]] vdla_bd_wrapper.bit] \
    [file join $out_dir vdla.bit]
file copy -force [lindex [get_files -all -of_objects $bd_file *vdla_bd.hwh] 0] [file join $out_dir vdla.hwh]
write_hw_platform -fixed -include_bit -force -file [file join $out_dir vdla.xsa]

set summary [open [file join $out_dir summary.txt] w]
puts $summary "board $vdla_board"
puts $summary "config $vdla_config_name"
puts $summary "config_digest $vdla_config_digest"
puts $summary "clock_mhz_requested $vdla_clock_mhz"
puts $summary "clock_mhz_actual $clock_actual"
puts $summary "wns_ns $wns"
puts $summary "reg_base [format 0x%08X $vdla_reg_base]"
# Primitive counts of the whole design (PS interconnect included; per-module figures are in
# utilization.rpt): LUTs, flip-flops, DSP slices, block RAMs.
foreach {key pattern} {luts LUT* ffs FD* dsps DSP48* ramb36 RAMB36* ramb18 RAMB18*} {
    puts $summary "$key [llength [get_cells -hierarchical -quiet -filter "IS_PRIMITIVE && REF_NAME =~ $pattern"]]"
}
# The registers' addresses as the PS sees them (regmap offsets from params.tcl + the board's base).
foreach {name offset} $vdla_registers {
    puts $summary "reg_[string tolower $name] [format 0x%08X [expr {$vdla_reg_base + $offset}]]"
}
close $summary
if {$wns < 0} {
    puts "WARNING: VDLA: timing not met at $clock_actual MHz (WNS $wns ns); lower clock_mhz in the config"
}
puts "VDLA: wrote [file join $out_dir vdla.bit] and vdla.hwh (WNS $wns ns at $clock_actual MHz)"
