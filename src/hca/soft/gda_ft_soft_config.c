/*
 * Software HCA configuration: the UCX_GDA_FT_SOFT_* table, its (re)loading,
 * and the parsing of the device list (name=ADDR[:PORT][+ADDR[:PORT]]).
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gda_ft_soft_int.h"

#include <gda_ft_ucs_compat.h>
#include <ucs/debug/log.h>
#include <ucs/sys/string.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

ucs_config_field_t gda_ft_soft_config_table[] = {
    {"DEVICES", "",
     "Software HCAs of this process: a comma-separated list of\n"
     "name=ADDR[:UDP_PORT][+ADDR[:UDP_PORT]] where each ADDR is the IPv4\n"
     "address of one port ('+' declares a dual-port card), e.g.\n"
     "soft0=127.0.0.1,soft1=127.0.0.2. The UDP port defaults to 4791.",
     ucs_offsetof(gda_ft_soft_config_t, devices), UCS_CONFIG_TYPE_STRING},

    {"MTU", "4096",
     "Active MTU of every soft port, in bytes (256, 512, 1024, 2048, 4096).",
     ucs_offsetof(gda_ft_soft_config_t, mtu), UCS_CONFIG_TYPE_UINT},

    {"SPIN_TIME", "200us",
     "How long the engine thread keeps polling after its last activity\n"
     "before it sleeps.",
     ucs_offsetof(gda_ft_soft_config_t, spin_time), UCS_CONFIG_TYPE_TIME},

    {"IDLE_POLL", "1ms",
     "Sleep interval of an idle engine: doorbell records written by GPU\n"
     "posters are noticed within this time. CPU posters wake it at once.",
     ucs_offsetof(gda_ft_soft_config_t, idle_poll), UCS_CONFIG_TYPE_TIME},

    {"FAULTS", "",
     "Port fault schedule: TIME:DEV:PORT:down|up entries separated by ';',\n"
     "TIME relative to the first device open, e.g. 200ms:soft0:1:down;1s:soft0:1:up",
     ucs_offsetof(gda_ft_soft_config_t, faults), UCS_CONFIG_TYPE_STRING},

    {"SEED", "1",
     "Seed of the fault injector's random generator.",
     ucs_offsetof(gda_ft_soft_config_t, seed), UCS_CONFIG_TYPE_ULONG},

    {"DROP", "0",
     "Probability to drop a packet, on every port.",
     ucs_offsetof(gda_ft_soft_config_t, drop), UCS_CONFIG_TYPE_DOUBLE},

    {"DELAY", "0",
     "Probability to delay a packet by DELAY_TIME, on every port.",
     ucs_offsetof(gda_ft_soft_config_t, delay), UCS_CONFIG_TYPE_DOUBLE},

    {"DELAY_TIME", "100us",
     "Delay of the packets selected by DELAY.",
     ucs_offsetof(gda_ft_soft_config_t, delay_time), UCS_CONFIG_TYPE_TIME},

    {"REORDER", "0",
     "Probability to hold a packet back so that later ones overtake it.",
     ucs_offsetof(gda_ft_soft_config_t, reorder), UCS_CONFIG_TYPE_DOUBLE},

    {"ACK_DROP", "0",
     "Probability to drop a response (ACK, NAK, read response, atomic ACK)\n"
     "on every port, on top of DROP: the request landed, its initiator does\n"
     "not learn it, and retransmits.",
     ucs_offsetof(gda_ft_soft_config_t, ack_drop), UCS_CONFIG_TYPE_DOUBLE},

    {"CTL_DIR", "/tmp",
     "Directory of the control socket gda_ft-soft.<pid>.sock used by\n"
     "gda_ft_softctl; empty to disable.",
     ucs_offsetof(gda_ft_soft_config_t, ctl_dir), UCS_CONFIG_TYPE_STRING},

    {"LONG_PASS", "10ms",
     "An engine pass at least this long is reported at the diag log level,\n"
     "with its receive time, its datagrams and the GPU copies and waits\n"
     "of its time.",
     ucs_offsetof(gda_ft_soft_config_t, long_pass), UCS_CONFIG_TYPE_TIME},

    {"LINK_CHECK", "50ms",
     "Interval of the check of the network interface carrying each port\n"
     "(a port whose interface is down is reported down), where the kernel's\n"
     "notices of link and address changes (rtnetlink) cannot be had; with\n"
     "them, the check runs when one comes.",
     ucs_offsetof(gda_ft_soft_config_t, link_check), UCS_CONFIG_TYPE_TIME},

    {"PASS_CPU_TIME", "n",
     "Measure the CPU time and context switches of the engine threads at\n"
     "every pass (a system call each), to tell a long gap between two\n"
     "passes that worked from one that waited for a CPU, a lock or the\n"
     "hypervisor (gda_ft_softctl stats).",
     ucs_offsetof(gda_ft_soft_config_t, pass_cpu_time), UCS_CONFIG_TYPE_BOOL},

    {"LOOPBACK", "y",
     "Hand a datagram to a port of the same process directly, as an HCA\n"
     "loops back traffic between its own ports, instead of through the\n"
     "kernel's UDP stack. The packets, the RC protocol and every fault are\n"
     "the same; only the two system calls per packet go, which bound one\n"
     "engine thread to about 200k packets/s. 'n' sends every datagram\n"
     "through the kernel (for a capture on the loopback interface).",
     ucs_offsetof(gda_ft_soft_config_t, loopback), UCS_CONFIG_TYPE_BOOL},

    {"THREADS", "1",
     "Engine threads: each serves its own devices (device i of DEVICES goes\n"
     "to thread i mod THREADS), as each HCA has its own processing units.\n"
     "'auto': one per device when the process may use at least 4 CPUs per\n"
     "thread, else fewer (one on a machine of fewer than 8 CPUs). One by\n"
     "default: more measured no gain (docs/device-datapath.md).",
     ucs_offsetof(gda_ft_soft_config_t, threads), UCS_CONFIG_TYPE_ULUNITS},

    {"TX_BUDGET", "16",
     "Datagrams an engine thread sends per pass (1 to 256), shared by the\n"
     "QPs that have some to send (each may send at least 4). A pass then\n"
     "stays short however many QPs are busy, and each QP's acknowledgements\n"
     "come within a few passes; a larger budget sends a window in fewer\n"
     "passes (docs/device-datapath.md measures 8, 16 and 32).",
     ucs_offsetof(gda_ft_soft_config_t, tx_budget), UCS_CONFIG_TYPE_UINT},

    {"RX_BUDGET", "256",
     "Datagrams an engine thread receives from a port per pass before it\n"
     "serves its QPs (32 to 1024; received in batches of 32). A small\n"
     "budget keeps a pass short when many datagrams wait (each costs\n"
     "microseconds, more where it writes into GPU memory), so that\n"
     "acknowledgements, completions and the QPs' sends go out sooner: under\n"
     "load on GPU memory, 32 made passes of a millisecond or more 200 times\n"
     "rarer than 256 at the same throughput. But a thread that receives\n"
     "less than its peers send falls behind: with 32 or 64, 64 threads\n"
     "posting on 32 channels both ways under ThreadSanitizer filled the\n"
     "queue between ports of one process, and its drops kept the channels\n"
     "from failing back (docs/benchmarks.md).",
     ucs_offsetof(gda_ft_soft_config_t, rx_budget), UCS_CONFIG_TYPE_UINT},

    {"CUDA_STAGING", "y",
     "How the engine writes into GPU memory. 'y': a write is queued on the\n"
     "engine thread's stream through pinned staging memory and waited for\n"
     "only before something could make it visible (a packet sent, a\n"
     "completion, an atomic, a read). 'n': every packet's copy is waited\n"
     "for (slower; for comparison).",
     ucs_offsetof(gda_ft_soft_config_t, cuda_staging), UCS_CONFIG_TYPE_BOOL},

    {"CUDA_SNAPSHOT", "y",
     "How the engine reads a message it sends from GPU memory. 'y': the\n"
     "whole message (up to 256 KiB) in one copy before its first packet is\n"
     "built. 'n': one copy, waited for, per packet (slower; for\n"
     "comparison).",
     ucs_offsetof(gda_ft_soft_config_t, cuda_snapshot),
     UCS_CONFIG_TYPE_BOOL},

    {"CUDA_READ_ASYNC", "y",
     "With CUDA_SNAPSHOT, whether the engine goes on while messages are\n"
     "read from GPU memory. 'y': the reads run on a stream of the engine\n"
     "thread's own and the engine serves its other QPs until they land; a\n"
     "QP sends a message once its read has landed. 'n': the engine waits\n"
     "for each QP's reads of a pass (for comparison).",
     ucs_offsetof(gda_ft_soft_config_t, cuda_read_async),
     UCS_CONFIG_TYPE_BOOL},

    {"CUDA_READ_BATCH", "8",
     "With CUDA_SNAPSHOT, how many of a QP's next messages in GPU memory\n"
     "are read ahead of sending, in one batch (0 or 1: each when it is\n"
     "next).",
     ucs_offsetof(gda_ft_soft_config_t, cuda_read_batch),
     UCS_CONFIG_TYPE_UINT},

    {"CUDA_COPY_BATCH", "n",
     "How the engine queues its copies of GPU memory. 'n': a\n"
     "cudaMemcpyAsync call per copy (copies that continue each other\n"
     "merged), naming its direction, so that the runtime refuses GPU\n"
     "memory freed while registered and the operation fails. 'y': the\n"
     "copies it has for a stream (a receive batch's writes, a pass's reads)\n"
     "in one cudaMemcpyBatchAsync call, where the CUDA runtime has it (12.8\n"
     "and later); that call would take freed GPU memory for host memory and\n"
     "fault, so a copy whose GPU memory the runtime does not report as such\n"
     "at both ends is queued alone and refused. A batch costs the engine\n"
     "less per copy the more it holds (docs/benchmarks.md).",
     ucs_offsetof(gda_ft_soft_config_t, cuda_copy_batch),
     UCS_CONFIG_TYPE_BOOL},

    {"CUDA_COPY_MERGE", "y",
     "Whether a copy of GPU memory that continues one the engine has not\n"
     "queued yet, in both source and destination (the next packet of a\n"
     "message, the next slot of a buffer written in order), is merged into\n"
     "it. 'n': one copy per packet and message (for comparison).",
     ucs_offsetof(gda_ft_soft_config_t, cuda_copy_merge),
     UCS_CONFIG_TYPE_BOOL},

    {"CUDA_ATOMIC_BATCH", "y",
     "Whether the atomics on GPU memory that one engine thread receives\n"
     "between two of its flushes run together: their words read in one\n"
     "wait, an atomic on a word another one of them changed computed from\n"
     "its result, each word's new value written once. 'n': each atomic\n"
     "reads its word and waits (for comparison). Engine threads change a\n"
     "word one at a time.",
     ucs_offsetof(gda_ft_soft_config_t, cuda_atomic_batch),
     UCS_CONFIG_TYPE_BOOL},

    {"ATOMIC_HOST_ORDER", "n",
     "Write the old value of an 8-byte fetching atomic in host byte order,\n"
     "as a ConnectX does where mlx5_core selects that mode (its\n"
     "atomic_req_8B_endianness_mode); 'n': big-endian, as 4-byte ones\n"
     "always are. The transport and the device API follow the device's\n"
     "mode either way.",
     ucs_offsetof(gda_ft_soft_config_t, atomic_host_order),
     UCS_CONFIG_TYPE_BOOL},

    {NULL}
};

UCS_CONFIG_REGISTER_TABLE(gda_ft_soft_config_table, "GDA_FT software HCA",
                          "GDA_FT_SOFT_", gda_ft_soft_config_t,
                          &ucs_config_global_list)

static int gda_ft_soft_config_loaded;

ucs_status_t gda_ft_soft_reload_config(void)
{
    gda_ft_soft_config_t *config = &gda_ft_soft_engine.config;
    ucs_status_t status;

    if (gda_ft_soft_engine.refcount > 0) {
        return UCS_ERR_BUSY;
    }

    if (gda_ft_soft_config_loaded) {
        ucs_config_parser_release_opts(config, gda_ft_soft_config_table);
        gda_ft_soft_config_loaded = 0;
    }

    status = GDA_FT_CONFIG_FILL_OPTS(config, gda_ft_soft_config_table, "UCX_",
                                     0);
    if (status != UCS_OK) {
        return status;
    }

    if ((config->mtu < 256) || (config->mtu > 4096) ||
        (config->mtu & (config->mtu - 1))) {
        ucs_error("UCX_GDA_FT_SOFT_MTU=%u: must be 256, 512, 1024, 2048 or "
                  "4096", config->mtu);
        ucs_config_parser_release_opts(config, gda_ft_soft_config_table);
        return UCS_ERR_INVALID_PARAM;
    }

    if ((config->tx_budget == 0) ||
        (config->tx_budget > GDA_FT_SOFT_MAX_PKTS_INFLIGHT)) {
        ucs_error("UCX_GDA_FT_SOFT_TX_BUDGET=%u: must be 1 to %u",
                  config->tx_budget, GDA_FT_SOFT_MAX_PKTS_INFLIGHT);
        ucs_config_parser_release_opts(config, gda_ft_soft_config_table);
        return UCS_ERR_INVALID_PARAM;
    }

    if ((config->rx_budget < GDA_FT_SOFT_RX_BATCH) ||
        (config->rx_budget > GDA_FT_SOFT_RX_BUDGET_MAX)) {
        ucs_error("UCX_GDA_FT_SOFT_RX_BUDGET=%u: must be %u to %u",
                  config->rx_budget, GDA_FT_SOFT_RX_BATCH,
                  GDA_FT_SOFT_RX_BUDGET_MAX);
        ucs_config_parser_release_opts(config, gda_ft_soft_config_table);
        return UCS_ERR_INVALID_PARAM;
    }

    gda_ft_soft_config_loaded = 1;
    return UCS_OK;
}

ucs_status_t gda_ft_soft_config_get(void)
{
    return gda_ft_soft_config_loaded ? UCS_OK : gda_ft_soft_reload_config();
}

static ucs_status_t gda_ft_soft_parse_port(const char *dev, const char *str,
                                           struct sockaddr_in *addr)
{
    char buf[64], *colon, *end;
    unsigned long udp = GDA_FT_ROCE_UDP_PORT;

    if (strlen(str) >= sizeof(buf)) {
        goto err;
    }
    strcpy(buf, str);

    colon = strchr(buf, ':');
    if (colon != NULL) {
        *colon = '\0';
        udp    = strtoul(colon + 1, &end, 10);
        if ((*end != '\0') || (udp == 0) || (udp > 65535)) {
            goto err;
        }
    }

    memset(addr, 0, sizeof(*addr));
    addr->sin_family = AF_INET;
    addr->sin_port   = htons((uint16_t)udp);
    if (inet_pton(AF_INET, buf, &addr->sin_addr) != 1) {
        goto err;
    }
    return UCS_OK;

err:
    ucs_error("UCX_GDA_FT_SOFT_DEVICES: device '%s': invalid port address "
              "'%s' (expected IPV4[:UDP_PORT])", dev, str);
    return UCS_ERR_INVALID_PARAM;
}

ucs_status_t gda_ft_soft_parse_devices(const char *spec,
                                       gda_ft_hca_dev_info_t **infos_p,
                                       unsigned *count_p,
                                       struct sockaddr_in (*addrs)[GDA_FT_HCA_MAX_PORTS])
{
    gda_ft_hca_dev_info_t *infos;
    char *copy, *entry, *save1, *save2, *eq, *port;
    ucs_status_t status = UCS_OK;
    unsigned count      = 0, i;

    infos = calloc(GDA_FT_SOFT_MAX_DEVS, sizeof(*infos));
    copy  = strdup(spec);
    if ((infos == NULL) || (copy == NULL)) {
        status = UCS_ERR_NO_MEMORY;
        goto out;
    }

    for (entry = strtok_r(copy, ",", &save1); entry != NULL;
         entry = strtok_r(NULL, ",", &save1)) {
        eq = strchr(entry, '=');
        if ((eq == NULL) || (eq == entry) ||
            ((size_t)(eq - entry) >= GDA_FT_HCA_NAME_MAX)) {
            ucs_error("UCX_GDA_FT_SOFT_DEVICES: invalid entry '%s' (expected "
                      "name=ADDR[:PORT][+ADDR[:PORT]])", entry);
            status = UCS_ERR_INVALID_PARAM;
            goto out;
        }

        if (count == GDA_FT_SOFT_MAX_DEVS) {
            ucs_error("UCX_GDA_FT_SOFT_DEVICES: more than %d devices",
                      GDA_FT_SOFT_MAX_DEVS);
            status = UCS_ERR_INVALID_PARAM;
            goto out;
        }

        *eq = '\0';
        for (i = 0; i < count; ++i) {
            if (!strcmp(infos[i].name, entry)) {
                ucs_error("UCX_GDA_FT_SOFT_DEVICES: device '%s' declared "
                          "twice", entry);
                status = UCS_ERR_INVALID_PARAM;
                goto out;
            }
        }

        strcpy(infos[count].name, entry);
        infos[count].numa_node = -1;
        for (port = strtok_r(eq + 1, "+", &save2); port != NULL;
             port = strtok_r(NULL, "+", &save2)) {
            if (infos[count].num_ports == GDA_FT_HCA_MAX_PORTS) {
                ucs_error("UCX_GDA_FT_SOFT_DEVICES: device '%s' has more "
                          "than %d ports", entry, GDA_FT_HCA_MAX_PORTS);
                status = UCS_ERR_INVALID_PARAM;
                goto out;
            }
            status = gda_ft_soft_parse_port(entry, port,
                         &addrs[count][infos[count].num_ports]);
            if (status != UCS_OK) {
                goto out;
            }
            ++infos[count].num_ports;
        }

        if (infos[count].num_ports == 0) {
            ucs_error("UCX_GDA_FT_SOFT_DEVICES: device '%s' has no port",
                      entry);
            status = UCS_ERR_INVALID_PARAM;
            goto out;
        }
        ++count;
    }

out:
    free(copy);
    if (status != UCS_OK) {
        free(infos);
        return status;
    }
    *infos_p = infos;
    *count_p = count;
    return UCS_OK;
}
