# TUL PYNQ-Z2 (Zynq-7020): generated from vdla_hw/fpga/boards.py by `vdla fpga gen-scripts`. Do not edit.
set vdla_board pynq-z2
set vdla_part xc7z020clg400-1
set vdla_board_part_pattern *:pynq-z2:*
set vdla_ps_ip processing_system7
set vdla_ps_rule xilinx.com:bd_rule:processing_system7
set vdla_ps_external {FIXED_IO DDR}
set vdla_ps_clock_prop PCW_FPGA0_PERIPHERAL_FREQMHZ
set vdla_ps_actual_clock_prop PCW_ACT_FPGA0_PERIPHERAL_FREQMHZ
set vdla_ps_enable {PCW_USE_M_AXI_GP0 1 PCW_USE_S_AXI_HP0 1 PCW_USE_FABRIC_INTERRUPT 1 PCW_IRQ_F2P_INTR 1}
set vdla_ps_hp_width_prop PCW_S_AXI_HP0_DATA_WIDTH
set vdla_ps_gp_intf M_AXI_GP0
set vdla_ps_hp_intf S_AXI_HP0
set vdla_ps_clk_pin FCLK_CLK0
set vdla_ps_rstn_pin FCLK_RESET0_N
set vdla_ps_gp_aclk_pin M_AXI_GP0_ACLK
set vdla_ps_hp_aclk_pin S_AXI_HP0_ACLK
set vdla_ps_irq_pin IRQ_F2P
set vdla_ps_address_space Data
set vdla_reg_base 0x43C00000
