/*
 * A DEVX emulator: a gda_ft_mlx5_sys_t whose devices answer as ConnectX
 * firmware and the kernel would, and whose queues carry traffic.
 *
 * Each device of UCX_GDA_FT_SOFT_DEVICES becomes an mlx5 device of the same
 * name, backed by that software HCA: its PDs, MRs, CQs and QPs are the
 * soft HCA's, created from what the DEVX commands say in PRM bytes. The
 * CQ and QP rings, doorbell records and UAR page are the ones the mlx5
 * provider registered, so the soft engine executes the WQEs the datapath
 * writes into the provider's send queue and writes CQEs into the
 * provider's CQ buffer. Port changes of the soft device (its fault
 * injection, gda_ft_softctl) arrive as verbs async events. The devices
 * say that a CPU thread plays them (dev_flags), and a doorbell a CPU
 * rings wakes that thread as on a soft device (qp_wake).
 *
 * Every command is decoded from its input with the PRM accessors and
 * checked as firmware checks it (gda_ft_mlx5_emu_check.h); a refused one
 * fails with EREMOTEIO, its output's status and syndrome set.
 *
 * The device it plays (its limits, and whether its firmware can answer
 * 8-byte atomics in host order) is a profile, UCX_GDA_FT_MLX5_EMU_DEVICE
 * (gda_ft_mlx5_emu_caps.h). The 8-byte atomic reply order it reports in
 * QUERY_HCA_CAP is the one its engine writes, as mlx5_core would have set
 * it: UCX_GDA_FT_SOFT_ATOMIC_HOST_ORDER.
 */
#ifndef GDA_FT_MLX5_EMU_H_
#define GDA_FT_MLX5_EMU_H_

#include "gda_ft_mlx5.h"

/* The emulator's operations table, registered as "emu" */
extern const gda_ft_mlx5_sys_t gda_ft_mlx5_sys_emu;

/* Objects of the emulator still alive (contexts, PDs, MRs, umems, UARs,
 * CQs, QPs, unacknowledged events): 0 when all was released */
unsigned gda_ft_mlx5_emu_live_objects(void);

/* Changes the GID table of an emulated device's port as a link flap can
 * (moved: 1): an IPv6 address takes the entries the IPv4 address had, and
 * the IPv4 address the next two, so that the entry at the index a QP was
 * connected with is another address now; 0 puts the table back. The
 * provider must read the table again before it connects a QP there. For
 * an open device: UCS_ERR_NO_DEVICE otherwise, UCS_ERR_INVALID_PARAM for
 * a port it does not have. */
ucs_status_t gda_ft_mlx5_emu_gid_move(const char *dev_name, uint8_t port_num,
                                      int moved);

/* QPs of the device's port connected (INIT2RTR) with the GID table entry
 * at gid_index, and not moved to ERR or RESET since */
unsigned gda_ft_mlx5_emu_qps_sending_from(const char *dev_name,
                                          uint8_t port_num,
                                          unsigned gid_index);

#endif
