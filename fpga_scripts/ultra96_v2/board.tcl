# Avnet Ultra96-V2 (Zynq UltraScale+ ZU3EG): generated from vdla_hw/fpga/boards.py by `vdla fpga gen-scripts`. Do not edit.
set vdla_board ultra96-v2
set vdla_part xczu3eg-sbva484-1-e
set vdla_board_part_pattern *:ultra96v2:*
set vdla_ps_ip zynq_ultra_ps_e
set vdla_ps_rule xilinx.com:bd_rule:zynq_ultra_ps_e
set vdla_ps_external {}
set vdla_ps_clock_prop PSU__CRL_APB__PL0_REF_CTRL__FREQMHZ
set vdla_ps_actual_clock_prop PSU__CRL_APB__PL0_REF_CTRL__ACT_FREQMHZ
set vdla_ps_enable {PSU__USE__M_AXI_GP0 1 PSU__USE__M_AXI_GP1 0 PSU__USE__M_AXI_GP2 0 PSU__USE__S_AXI_GP2 1 PSU__USE__IRQ0 1}
set vdla_ps_hp_width_prop PSU__SAXIGP2__DATA_WIDTH
set vdla_ps_gp_intf M_AXI_HPM0_FPD
set vdla_ps_hp_intf S_AXI_HP0_FPD
set vdla_ps_clk_pin pl_clk0
set vdla_ps_rstn_pin pl_resetn0
set vdla_ps_gp_aclk_pin maxihpm0_fpd_aclk
set vdla_ps_hp_aclk_pin saxihp0_fpd_aclk
set vdla_ps_irq_pin pl_ps_irq0
set vdla_ps_address_space Data
set vdla_reg_base 0xA0000000
