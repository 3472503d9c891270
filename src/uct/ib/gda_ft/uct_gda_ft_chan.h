/*
 * gda_ft UCT transport: the channels of an endpoint.
 *
 * Every endpoint has its host channel (channel 0, uct_gda_ft_hchan.h) and,
 * with UCX_GDA_FT_DEVICE_CHANNELS=N, N concurrent device channels
 * (device/gda_ft_chan_*.h) to its peer, for GPU kernels or CPU threads
 * posting through the device API. The endpoint address carries the host
 * channel's QP numbers and the channel count; the device channels' QP
 * numbers follow in the endpoints' channel directories, which each end
 * pushes into the peer's mailbox over a control QP once UCP wireup
 * connected it (uct_gda_ft_wire.h). The guardian
 * pass runs their host halves and speaks for them to the peer through the
 * endpoints' mailboxes, by control operations on the endpoint's control
 * QPs.
 */
#ifndef UCT_GDA_FT_CHAN_H_
#define UCT_GDA_FT_CHAN_H_

#include "uct_gda_ft_iface.h"
#include "uct_gda_ft_wire.h"
#include "gda_ft_chan_host.h"

/* Bytes of one put or get WQE on a channel: larger ones are cut into
 * signalled chunks (design §6.3: a deadline covers what is in flight) */
#define UCT_GDA_FT_CHAN_MAX_CHUNK   (64 * 1024)

/* Creates the endpoint's channels: its host channel and DEVICE_CHANNELS */
ucs_status_t uct_gda_ft_ep_chans_create(uct_gda_ft_ep_t *ep,
                                        uct_gda_ft_iface_t *iface);

void uct_gda_ft_ep_chans_destroy(uct_gda_ft_ep_t *ep);

/* The receive side of the peer's host channel, at the endpoint's
 * destruction: stop moves our target QPs of channel 0 to ERR (posted
 * buffers flush); cleanup, once the receive CQs are drained, returns the
 * buffers and forgets the QPs */
void uct_gda_ft_ep_chan_rx_stop(uct_gda_ft_ep_t *ep);
void uct_gda_ft_ep_chan_rx_cleanup(uct_gda_ft_ep_t *ep);

/* Fills the channel part of the endpoint's address */
void uct_gda_ft_ep_chans_pack(uct_gda_ft_ep_t *ep,
                              uct_gda_ft_ep_addr_info_t *info);

/* Connects the channels to the peer's (as many as both sides have), with
 * both paths or, without a backup HCA at either end, the primary alone */
ucs_status_t uct_gda_ft_ep_chans_connect(uct_gda_ft_ep_t *ep,
                                         const uct_gda_ft_ep_addr_info_t *peer,
                                         unsigned num_paths);

/* The exchange of channel directories with the peer while it goes on
 * (the guardian's pass runs it too): the device channels are handed out
 * once both ends connected them */
void uct_gda_ft_ep_chans_dir_progress(uct_gda_ft_ep_t *ep);

/* The guardian's pass over the channels, and the peer's questions */
void uct_gda_ft_ep_chans_progress(uct_gda_ft_ep_t *ep, uint64_t now);

/* "counters" lines of the endpoint's channels, after `prefix` */
size_t uct_gda_ft_ep_chans_format(uct_gda_ft_ep_t *ep, const char *prefix,
                                  char *buf, size_t max);


/*
 * Exported for the device API's host side (src/ucp_ext) and tests.
 *
 * The channels of a connected endpoint, as posters use them: an array of
 * *count_p channels in host memory, which CPU posters use in place and a
 * GPU's host-side setup copies where its kernels read them. Valid until the
 * endpoint is destroyed. UCS_ERR_UNSUPPORTED: not an HCA endpoint of
 * gda_ft, or its interface or the peer's has no device channels;
 * UCS_ERR_NOT_CONNECTED: not yet: the endpoint is not connected, or the
 * channel directories are being exchanged (progress, and ask again);
 * another error: the exchange failed (the endpoint's error), or the
 * endpoint or its peer failed before it ended. With DEVICE_CHANNEL_RINGS=mapped (the
 * default) rings, mailboxes and doorbell records are in whole pages of host
 * memory for the caller to map into the GPU, and the HCA watches the
 * doorbell records; with "host", CPU threads post and ring doorbells.
 */
ucs_status_t uct_gda_ft_ep_device_channels(uct_ep_h tl_ep,
                                           gda_ft_chan_t **chans_p,
                                           unsigned *count_p);

/* GDA_FT_DEV_EP_F_* of a device endpoint over this UCT endpoint's
 * channels (gda_ft_dev_endpoint_t.flags) */
uint32_t uct_gda_ft_ep_device_flags(uct_ep_h tl_ep);

/* What channel `id` has been through; `poster` is the channel the posters
 * used (NULL: the array uct_gda_ft_ep_device_channels() returned) */
ucs_status_t uct_gda_ft_ep_query_channel(uct_ep_h tl_ep, unsigned id,
                                         const gda_ft_chan_t *poster,
                                         gda_ft_chan_query_t *query);

/* The endpoint's control QP of `path`, and whether control writes use it
 * (*usable_p: not failed, not absent); NULL before it is connected. For
 * tests that break it, and tools. */
gda_ft_hca_qp_t *uct_gda_ft_ep_control_qp(uct_ep_h tl_ep, unsigned path,
                                          int *usable_p);

/* What the endpoint's host channel (channel 0) has been through: its
 * path, state and counters; UCS_ERR_UNSUPPORTED before it is connected */
ucs_status_t uct_gda_ft_ep_query_host_channel(uct_ep_h tl_ep,
                                              gda_ft_chan_query_t *query);

/*
 * The same channels, held: they (their QPs, rings and mailboxes) outlive
 * the endpoint until the last holder puts them back, since UCP may
 * destroy an endpoint that failed while kernels still post into its
 * channels. Once the endpoint is gone they have no guardian: posters find
 * a dead path by their deadlines, and no failback comes.
 */
ucs_status_t uct_gda_ft_ep_channels_get(uct_ep_h tl_ep,
                                        uct_gda_ft_ep_chans_t **chans_p);
gda_ft_chan_t *uct_gda_ft_channels(uct_gda_ft_ep_chans_t *chans,
                                   unsigned *count_p);
ucs_status_t uct_gda_ft_channels_query(uct_gda_ft_ep_chans_t *chans,
                                       unsigned id,
                                       const gda_ft_chan_t *poster,
                                       gda_ft_chan_query_t *query);

/* The HCA and port (1-based) that carry path `path` of the device
 * channels (they all take the endpoint's pair of HCAs) */
ucs_status_t uct_gda_ft_channels_path(const uct_gda_ft_ep_chans_t *chans,
                                      unsigned path, const char **device_p,
                                      unsigned *port_p);
void uct_gda_ft_channels_put(uct_gda_ft_ep_chans_t *chans);

/* Where kernels post on the device channels, when a device endpoint copied
 * them, and how the host reads it: the counters command (gda_ft_softctl
 * counters) shows that copy (the last one set). Dropped with the copy:
 * the transport's own is shown again. */
void uct_gda_ft_channels_set_view(uct_gda_ft_ep_chans_t *chans,
                                  const gda_ft_chan_t *view,
                                  ucs_status_t (*read)(void *dst,
                                                       const void *src,
                                                       size_t size));
void uct_gda_ft_channels_drop_view(uct_gda_ft_ep_chans_t *chans,
                                   const gda_ft_chan_t *view);

#endif
