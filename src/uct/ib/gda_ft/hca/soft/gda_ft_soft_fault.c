/*
 * Software HCA fault injection: port down/up (API, control socket, schedule
 * in the environment, carrier of the network interface), seeded packet
 * drop/delay/reorder and the "responses lost" mode.
 */
#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "gda_ft_soft_int.h"

#include <ucs/debug/log.h>
#include <ucs/sys/string.h>
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static gda_ft_soft_port_t *gda_ft_soft_port_get(gda_ft_hca_dev_t *hca_dev,
                                                uint8_t port_num)
{
    gda_ft_soft_dev_t *dev;

    if ((hca_dev == NULL) || !gda_ft_soft_is_soft_dev(hca_dev) ||
        (port_num < 1) || (port_num > hca_dev->attr.info.num_ports)) {
        return NULL;
    }
    dev = ucs_derived_of(hca_dev, gda_ft_soft_dev_t);
    return &dev->ports[port_num - 1];
}

/* Posts a port event when the effective state changed; lock held */
static void gda_ft_soft_port_update(gda_ft_soft_port_t *port)
{
    int up = gda_ft_soft_port_is_up(port);

    if (up == port->reported_up) {
        return;
    }

    port->reported_up = up;
    port->down_ns     = up ? 0 : gda_ft_soft_realtime_ns();
    ucs_debug("%s: port %u is %s", port->dev->super.attr.info.name,
              port->num, up ? "ACTIVE" : "DOWN");
    gda_ft_soft_dev_post_event(port->dev, up ? GDA_FT_HCA_EVENT_PORT_ACTIVE :
                                               GDA_FT_HCA_EVENT_PORT_ERR,
                               port->num, 0);
}

static ucs_status_t gda_ft_soft_port_set_up_locked(gda_ft_hca_dev_t *dev,
                                                   uint8_t port_num, int up)
{
    gda_ft_soft_port_t *port = gda_ft_soft_port_get(dev, port_num);

    if (port == NULL) {
        return UCS_ERR_INVALID_PARAM;
    }

    __atomic_store_n(&port->admin_up, !!up, __ATOMIC_RELAXED);
    gda_ft_soft_port_update(port);
    return UCS_OK;
}

ucs_status_t gda_ft_soft_port_set_up(gda_ft_hca_dev_t *dev, uint8_t port_num,
                                     int up)
{
    ucs_status_t status;

    gda_ft_soft_engine_lock();
    status = gda_ft_soft_port_set_up_locked(dev, port_num, up);
    gda_ft_soft_engine_unlock();
    gda_ft_soft_engine_wake();
    return status;
}

static int gda_ft_soft_prob_valid(double p)
{
    return (p >= 0.0) && (p <= 1.0);
}

/* NULL for settings a port can take, else why not (for the control
 * command's reply) */
static const char *gda_ft_soft_fault_invalid(const gda_ft_soft_fault_t *fault)
{
    if (!gda_ft_soft_prob_valid(fault->drop) ||
        !gda_ft_soft_prob_valid(fault->delay) ||
        !gda_ft_soft_prob_valid(fault->reorder) ||
        !gda_ft_soft_prob_valid(fault->ack_drop)) {
        return "probability must be within [0, 1]";
    }
    if ((fault->delay_time < 0) || (fault->delay_time > 10.0)) {
        return "delay time must be within [0, 10] s";
    }
    if ((fault->pace_time < 0) || (fault->pace_time > 0.1)) {
        /* a paced port sends at least 10 packets a second */
        return "pace must be within [0, 0.1] s";
    }
    return NULL;
}

ucs_status_t gda_ft_soft_port_set_fault(gda_ft_hca_dev_t *dev,
                                        uint8_t port_num,
                                        const gda_ft_soft_fault_t *fault)
{
    gda_ft_soft_port_t *port;

    if (gda_ft_soft_fault_invalid(fault) != NULL) {
        return UCS_ERR_INVALID_PARAM;
    }

    gda_ft_soft_engine_lock();
    port = gda_ft_soft_port_get(dev, port_num);
    if (port != NULL) {
        port->fault = *fault;
    }
    gda_ft_soft_engine_unlock();
    return (port != NULL) ? UCS_OK : UCS_ERR_INVALID_PARAM;
}

ucs_status_t gda_ft_soft_port_stats(gda_ft_hca_dev_t *dev, uint8_t port_num,
                                    gda_ft_soft_port_stats_t *stats)
{
    gda_ft_soft_port_t *port;

    gda_ft_soft_engine_lock();
    port = gda_ft_soft_port_get(dev, port_num);
    if (port != NULL) {
        *stats = port->stats;
    }
    gda_ft_soft_engine_unlock();
    return (port != NULL) ? UCS_OK : UCS_ERR_INVALID_PARAM;
}

static void gda_ft_soft_delay(gda_ft_soft_port_t *port, uint32_t dst_ip,
                              const void *pkt, size_t len, uint64_t delay_ns)
{
    gda_ft_soft_delayed_t *delayed, *iter;

    delayed = malloc(sizeof(*delayed) + len);
    if (delayed == NULL) {
        ++port->stats.fault_dropped;
        return;
    }

    delayed->due                 = gda_ft_soft_now_ns() + delay_ns;
    delayed->port                = port;
    delayed->dst                 = port->addr;
    delayed->dst.sin_addr.s_addr = dst_ip;
    delayed->len                 = len;
    memcpy(delayed->data, pkt, len);

    /* Keep the list sorted by due time */
    ucs_list_for_each(iter, &port->dev->worker->delayed, list) {
        if (iter->due > delayed->due) {
            ucs_list_insert_before(&iter->list, &delayed->list);
            ++port->stats.fault_delayed;
            return;
        }
    }
    ucs_list_add_tail(&port->dev->worker->delayed, &delayed->list);
    ++port->stats.fault_delayed;
}

int gda_ft_soft_fault_tx(gda_ft_soft_port_t *port, uint32_t dst_ip,
                         const void *pkt, size_t len, int is_response)
{
    const gda_ft_soft_fault_t *fault = &port->fault;
    gda_ft_soft_worker_t *worker     = port->dev->worker;
    uint64_t now;

    /* 1 draws no random number: the other faults' sequence stays as
     * without it */
    if (is_response && (fault->ack_drop > 0) &&
        ((fault->ack_drop >= 1.0) ||
         (gda_ft_soft_random(worker) < fault->ack_drop))) {
        ++port->stats.fault_dropped;
        return 1;
    }

    if ((fault->drop > 0) && (gda_ft_soft_random(worker) < fault->drop)) {
        ++port->stats.fault_dropped;
        return 1;
    }

    if ((fault->delay > 0) && (gda_ft_soft_random(worker) < fault->delay)) {
        gda_ft_soft_delay(port, dst_ip, pkt, len,
                          (uint64_t)(fault->delay_time * 1e9));
        return 1;
    }

    if ((fault->reorder > 0) && (gda_ft_soft_random(worker) < fault->reorder)) {
        /* Held back briefly: the packets sent next overtake it */
        gda_ft_soft_delay(port, dst_ip, pkt, len,
                          20000 + (uint64_t)(gda_ft_soft_random(worker) * 80000));
        return 1;
    }

    if (fault->pace_time > 0) {
        /* In line behind what the port still has to send */
        now               = gda_ft_soft_now_ns();
        port->pace_due_ns = ucs_max(now, port->pace_due_ns) +
                            (uint64_t)(fault->pace_time * 1e9);
        gda_ft_soft_delay(port, dst_ip, pkt, len, port->pace_due_ns - now);
        return 1;
    }

    return 0;
}

void gda_ft_soft_delayed_progress(gda_ft_soft_worker_t *worker, uint64_t now)
{
    gda_ft_soft_delayed_t *delayed;

    while (!ucs_list_is_empty(&worker->delayed)) {
        delayed = ucs_list_head(&worker->delayed,
                                gda_ft_soft_delayed_t, list);
        if (delayed->due > now) {
            break;
        }
        ucs_list_del(&delayed->list);
        if (gda_ft_soft_port_is_up(delayed->port)) {
            gda_ft_soft_sendto(delayed->port, delayed->dst.sin_addr.s_addr,
                               delayed->data, delayed->len);
        } else {
            ++delayed->port->stats.fault_dropped;
        }
        free(delayed);
    }
}

/* Parses "TIME:DEV:PORT:down|up;..." (TIME with a unit: 200ms, 1.5s) */
ucs_status_t gda_ft_soft_sched_parse(const char *spec,
                                     gda_ft_soft_sched_event_t **events_p,
                                     unsigned *count_p)
{
    gda_ft_soft_sched_event_t *events = NULL, *tmp;
    char *copy, *entry, *save, *fields[4], *end;
    unsigned count = 0, nf;
    double value, scale;

    *events_p = NULL;
    *count_p  = 0;
    if ((spec == NULL) || (*spec == '\0')) {
        return UCS_OK;
    }

    copy = strdup(spec);
    if (copy == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    for (entry = strtok_r(copy, ";", &save); entry != NULL;
         entry = strtok_r(NULL, ";", &save)) {
        for (nf = 0; nf < 4; ++nf) {
            fields[nf] = strsep(&entry, ":");
            if (fields[nf] == NULL) {
                break;
            }
        }
        if ((nf != 4) || (entry != NULL)) {
            goto err_syntax;
        }

        value = strtod(fields[0], &end);
        if (!strcmp(end, "s")) {
            scale = 1e9;
        } else if (!strcmp(end, "ms")) {
            scale = 1e6;
        } else if (!strcmp(end, "us")) {
            scale = 1e3;
        } else {
            goto err_syntax;
        }

        tmp = realloc(events, (count + 1) * sizeof(*events));
        if (tmp == NULL) {
            free(events);
            free(copy);
            return UCS_ERR_NO_MEMORY;
        }
        events = tmp;
        memset(&events[count], 0, sizeof(*events));
        events[count].at   = (uint64_t)(value * scale);
        events[count].port = (uint8_t)strtoul(fields[2], &end, 10);
        if ((value < 0) || (*end != '\0') || (events[count].port < 1) ||
            (events[count].port > GDA_FT_HCA_MAX_PORTS) ||
            (strlen(fields[1]) >= GDA_FT_HCA_NAME_MAX) ||
            (strcmp(fields[3], "up") && strcmp(fields[3], "down"))) {
            goto err_syntax;
        }
        strcpy(events[count].dev, fields[1]);
        events[count].up = !strcmp(fields[3], "up");
        ++count;
    }

    free(copy);
    *events_p = events;
    *count_p  = count;
    return UCS_OK;

err_syntax:
    ucs_error("UCX_GDA_FT_SOFT_FAULTS='%s': invalid entry (expected "
              "TIME{s|ms|us}:DEVICE:PORT:down|up separated by ';')", spec);
    free(events);
    free(copy);
    return UCS_ERR_INVALID_PARAM;
}

static int gda_ft_soft_sched_event_due(const gda_ft_soft_sched_event_t *event,
                                       uint64_t now)
{
    return !event->done && (now - gda_ft_soft_engine.start_ns >= event->at);
}

int gda_ft_soft_sched_due(uint64_t now)
{
    unsigned i;

    for (i = 0; i < gda_ft_soft_engine.sched_count; ++i) {
        if (gda_ft_soft_sched_event_due(&gda_ft_soft_engine.sched[i], now)) {
            return 1;
        }
    }
    return 0;
}

void gda_ft_soft_sched_progress(uint64_t now)
{
    gda_ft_soft_engine_t *engine = &gda_ft_soft_engine;
    gda_ft_soft_sched_event_t *event;
    gda_ft_hca_dev_t *dev;
    unsigned i;

    for (i = 0; i < engine->sched_count; ++i) {
        event = &engine->sched[i];
        if (!gda_ft_soft_sched_event_due(event, now)) {
            continue;
        }

        event->done = 1;
        dev         = gda_ft_soft_dev_find(event->dev);
        if ((dev == NULL) ||
            (gda_ft_soft_port_set_up_locked(dev, event->port, event->up) !=
             UCS_OK)) {
            ucs_warn("fault schedule: no soft port %s:%u in this process",
                     event->dev, event->port);
            continue;
        }
        ucs_diag("fault schedule: %s port %u %s", event->dev, event->port,
                 event->up ? "up" : "down");
    }
}

int gda_ft_soft_link_check_due(uint64_t now)
{
    return (now - gda_ft_soft_engine.last_link_check_ns) >=
           (uint64_t)(gda_ft_soft_engine.config.link_check * 1e9);
}

/* The carrier of the interface holding a port's address (netns testbeds) */
void gda_ft_soft_link_check(uint64_t now)
{
    gda_ft_soft_engine_t *engine = &gda_ft_soft_engine;
    struct ifaddrs *ifas, *ifa;
    gda_ft_soft_dev_t *dev;
    gda_ft_soft_port_t *port;
    unsigned p;
    int link_up;

    if (!gda_ft_soft_link_check_due(now)) {
        return;
    }
    engine->last_link_check_ns = now;

    if (ucs_list_is_empty(&engine->devs) || (getifaddrs(&ifas) != 0)) {
        return;
    }

    ucs_list_for_each(dev, &engine->devs, list) {
        for (p = 0; p < dev->super.attr.info.num_ports; ++p) {
            port    = &dev->ports[p];
            link_up = 0;
            for (ifa = ifas; ifa != NULL; ifa = ifa->ifa_next) {
                if ((ifa->ifa_addr != NULL) &&
                    (ifa->ifa_addr->sa_family == AF_INET) &&
                    (((struct sockaddr_in*)ifa->ifa_addr)->sin_addr.s_addr ==
                     port->addr.sin_addr.s_addr)) {
                    link_up = (ifa->ifa_flags & IFF_UP) &&
                              (ifa->ifa_flags & IFF_RUNNING);
                    break;
                }
            }
            /* Loopback addresses in 127/8 other than 127.0.0.1 have no
             * interface entry of their own: they follow "lo" */
            if ((ifa == NULL) &&
                ((ntohl(port->addr.sin_addr.s_addr) >> 24) == 127)) {
                link_up = 1;
            }
            /* one store: port queries read it without the engine lock */
            __atomic_store_n(&port->link_up, link_up, __ATOMIC_RELAXED);
            gda_ft_soft_port_update(port);
        }
    }
    freeifaddrs(ifas);
}

const char *gda_ft_soft_ctl_path(void)
{
    return gda_ft_soft_engine.ctl_path;
}

ucs_status_t gda_ft_soft_ctl_open(int epfd)
{
    gda_ft_soft_engine_t *engine = &gda_ft_soft_engine;
    struct sockaddr_un addr      = {.sun_family = AF_UNIX};
    const char *dir              = engine->config.ctl_dir;
    struct epoll_event ev        = {0};
    int fd;

    engine->ctl_path[0] = '\0';
    if ((dir == NULL) || (*dir == '\0')) {
        return UCS_OK;
    }

    if ((size_t)snprintf(engine->ctl_path, sizeof(engine->ctl_path),
                         "%s/gda_ft-soft.%d.sock", dir, getpid()) >=
        sizeof(engine->ctl_path)) {
        ucs_error("UCX_GDA_FT_SOFT_CTL_DIR '%s' is too long", dir);
        engine->ctl_path[0] = '\0';
        return UCS_ERR_INVALID_PARAM;
    }

    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        ucs_error("control socket: socket() failed: %m");
        return UCS_ERR_IO_ERROR;
    }

    strcpy(addr.sun_path, engine->ctl_path);
    unlink(addr.sun_path);
    if (bind(fd, (struct sockaddr*)&addr, sizeof(addr)) < 0) {
        ucs_warn("control socket %s: bind failed: %m (gda_ft_softctl will not"
                 " reach this process)", addr.sun_path);
        close(fd);
        engine->ctl_path[0] = '\0';
        return UCS_OK;
    }

    ev.events   = EPOLLIN;
    ev.data.ptr = engine;   /* wakes the engine; handled by ctl_progress */
    epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
    engine->ctl_fd = fd;
    return UCS_OK;
}

void gda_ft_soft_ctl_close(void)
{
    gda_ft_soft_engine_t *engine = &gda_ft_soft_engine;

    if (engine->ctl_fd >= 0) {
        close(engine->ctl_fd);
        unlink(engine->ctl_path);
        engine->ctl_fd = -1;
    }
    engine->ctl_path[0] = '\0';
}

static void gda_ft_soft_ctl_engine_stats(char *reply, size_t max)
{
    gda_ft_soft_engine_stats_t st;

    gda_ft_soft_engine_stats(&st);
    snprintf(reply, max, "engine threads %u passes %lu gaps <16us %lu <64us %lu "
             "<256us %lu <1ms %lu <4ms %lu >=4ms %lu max %.3f ms "
             "longest pass %.3f ms (receive %.3f, queues %.3f, "
             "housekeeping %.3f)\n",
             st.workers, st.passes, st.gaps[0], st.gaps[1], st.gaps[2], st.gaps[3],
             st.gaps[4], st.gaps[5], st.max_gap_ns / 1e6,
             st.max_pass_ns / 1e6, st.max_part_ns[0] / 1e6,
             st.max_part_ns[1] / 1e6, st.max_part_ns[2] / 1e6);
}

static void gda_ft_soft_ctl_stats(char *reply, size_t max)
{
    gda_ft_soft_dev_t *dev;
    gda_ft_soft_port_t *port;
    size_t len = 0;
    unsigned p;

    reply[0] = '\0';
    ucs_list_for_each(dev, &gda_ft_soft_engine.devs, list) {
        for (p = 0; p < dev->super.attr.info.num_ports; ++p) {
            port = &dev->ports[p];
            len += snprintf(reply + len, (len < max) ? max - len : 0,
                    "%s:%u %s tx %lu rx %lu retrans %lu implied_naks %lu "
                    "dropped %lu "
                    "malformed %lu bad_icrc %lu bad_qpn %lu bad_src %lu "
                    "out_of_seq %lu dup %lu naks %lu rnr_naks %lu "
                    "loopback %lu\n",
                    dev->super.attr.info.name, port->num,
                    gda_ft_soft_port_is_up(port) ? "ACTIVE" : "DOWN",
                    port->stats.tx_pkts, port->stats.rx_pkts,
                    port->stats.retransmits, port->stats.implied_naks,
                    port->stats.fault_dropped,
                    port->stats.rx_malformed, port->stats.rx_bad_icrc,
                    port->stats.rx_bad_qpn, port->stats.rx_bad_src,
                    port->stats.rx_out_of_seq, port->stats.rx_duplicate,
                    port->stats.tx_naks, port->stats.tx_rnr_naks,
                    port->stats.rx_loopback);
        }
    }
    gda_ft_soft_ctl_engine_stats(reply + ucs_min(len, max),
                                 (len < max) ? max - len : 0);
}

/* Commands added by upper layers (the UCT transport's "counters") */
typedef struct gda_ft_soft_ctl_ext {
    char                   name[32];
    gda_ft_soft_ctl_func_t func;
    void                  *arg;
} gda_ft_soft_ctl_ext_t;

#define GDA_FT_SOFT_CTL_MAX_EXT 16

static gda_ft_soft_ctl_ext_t gda_ft_soft_ctl_exts[GDA_FT_SOFT_CTL_MAX_EXT];

ucs_status_t gda_ft_soft_ctl_register(const char *name,
                                      gda_ft_soft_ctl_func_t func, void *arg)
{
    ucs_status_t status = UCS_ERR_EXCEEDS_LIMIT;
    unsigned i;

    if (strlen(name) >= sizeof(gda_ft_soft_ctl_exts[0].name)) {
        return UCS_ERR_INVALID_PARAM;
    }

    gda_ft_soft_engine_lock();
    for (i = 0; i < GDA_FT_SOFT_CTL_MAX_EXT; ++i) {
        if (gda_ft_soft_ctl_exts[i].func == NULL) {
            strcpy(gda_ft_soft_ctl_exts[i].name, name);
            gda_ft_soft_ctl_exts[i].func = func;
            gda_ft_soft_ctl_exts[i].arg  = arg;
            status                       = UCS_OK;
            break;
        }
    }
    gda_ft_soft_engine_unlock();
    return status;
}

void gda_ft_soft_ctl_unregister(gda_ft_soft_ctl_func_t func, void *arg)
{
    unsigned i;

    gda_ft_soft_engine_lock();
    for (i = 0; i < GDA_FT_SOFT_CTL_MAX_EXT; ++i) {
        if ((gda_ft_soft_ctl_exts[i].func == func) &&
            (gda_ft_soft_ctl_exts[i].arg == arg)) {
            memset(&gda_ft_soft_ctl_exts[i], 0, sizeof(gda_ft_soft_ctl_exts[i]));
        }
    }
    gda_ft_soft_engine_unlock();
}

/* Runs every extension named argv[0], appending their replies */
static int gda_ft_soft_ctl_run_extension(int argc, char **argv, char *reply,
                                         size_t max)
{
    size_t len = 0;
    int found  = 0;
    unsigned i;

    reply[0] = '\0';
    for (i = 0; i < GDA_FT_SOFT_CTL_MAX_EXT; ++i) {
        if ((gda_ft_soft_ctl_exts[i].func != NULL) &&
            !strcmp(gda_ft_soft_ctl_exts[i].name, argv[0]) && (len < max)) {
            gda_ft_soft_ctl_exts[i].func(gda_ft_soft_ctl_exts[i].arg, argc,
                                         argv, reply + len, max - len);
            len  += strlen(reply + len);
            found = 1;
        }
    }
    return found;
}

/* Executes a command with the engine lock held */
static ucs_status_t gda_ft_soft_ctl_exec_locked(char *cmd, char *reply,
                                                size_t max)
{
    char *argv[8], *save = NULL, *end;
    const char *why;
    gda_ft_soft_port_t *port;
    gda_ft_hca_dev_t *dev;
    gda_ft_soft_fault_t fault;
    unsigned long port_num;
    double value;
    int argc = 0;

    for (argv[argc] = strtok_r(cmd, " \t\n", &save);
         (argv[argc] != NULL) && (argc < 7);
         argv[++argc] = strtok_r(NULL, " \t\n", &save)) {
    }

    if ((argc == 1) && !strcmp(argv[0], "stats")) {
        gda_ft_soft_ctl_stats(reply, max);
        return UCS_OK;
    }

    if ((argc >= 1) && gda_ft_soft_ctl_run_extension(argc, argv, reply, max)) {
        return UCS_OK;
    }

    if (argc != 4) {
        goto usage;
    }

    dev      = gda_ft_soft_dev_find(argv[1]);
    port_num = strtoul(argv[2], &end, 10);
    if ((dev == NULL) || (*end != '\0') ||
        ((port = gda_ft_soft_port_get(dev, (uint8_t)port_num)) == NULL) ||
        (port_num > GDA_FT_HCA_MAX_PORTS)) {
        snprintf(reply, max, "error: no soft port %s:%s in process %d\n",
                 argv[1], argv[2], getpid());
        return UCS_ERR_NO_DEVICE;
    }

    if (!strcmp(argv[0], "port")) {
        if (strcmp(argv[3], "up") && strcmp(argv[3], "down")) {
            goto usage;
        }
        gda_ft_soft_port_set_up_locked(dev, port_num, !strcmp(argv[3], "up"));
        snprintf(reply, max, "ok: %s port %lu %s\n", argv[1], port_num,
                 argv[3]);
        return UCS_OK;
    }

    fault = port->fault;
    value = strtod(argv[3], &end);
    if (*end != '\0') {
        goto usage;
    }

    if (!strcmp(argv[0], "drop")) {
        fault.drop = value;
    } else if (!strcmp(argv[0], "delay")) {
        fault.delay = value;
    } else if (!strcmp(argv[0], "reorder")) {
        fault.reorder = value;
    } else if (!strcmp(argv[0], "ackloss")) {
        fault.ack_drop = value;
    } else if (!strcmp(argv[0], "pace")) {
        fault.pace_time = value;
    } else {
        goto usage;
    }

    why = gda_ft_soft_fault_invalid(&fault);
    if (why != NULL) {
        snprintf(reply, max, "error: %s\n", why);
        return UCS_ERR_INVALID_PARAM;
    }
    port->fault = fault;
    snprintf(reply, max, "ok: %s port %lu %s %g\n", argv[1], port_num,
             argv[0], value);
    return UCS_OK;

usage:
    snprintf(reply, max, "error: commands: stats | port DEV PORT up|down | "
             "drop|delay|reorder|ackloss DEV PORT PROB | "
             "pace DEV PORT SECONDS | "
             "commands added by the transport (counters)\n");
    return UCS_ERR_INVALID_PARAM;
}

ucs_status_t gda_ft_soft_ctl_exec(const char *cmd, char *reply, size_t max)
{
    ucs_status_t status;
    char *copy;

    copy = strdup(cmd);
    if (copy == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    gda_ft_soft_engine_lock();
    status = gda_ft_soft_ctl_exec_locked(copy, reply, max);
    gda_ft_soft_engine_unlock();
    free(copy);
    gda_ft_soft_engine_wake();
    return status;
}

void gda_ft_soft_ctl_progress(void)
{
    gda_ft_soft_engine_t *engine = &gda_ft_soft_engine;
    struct sockaddr_un from;
    socklen_t from_len = sizeof(from);
    char cmd[256], reply[4096];
    ssize_t len;

    if (engine->ctl_fd < 0) {
        return;
    }

    len = recvfrom(engine->ctl_fd, cmd, sizeof(cmd) - 1, MSG_DONTWAIT,
                   (struct sockaddr*)&from, &from_len);
    if (len <= 0) {
        return;
    }

    cmd[len] = '\0';
    gda_ft_soft_ctl_exec_locked(cmd, reply, sizeof(reply));
    if (from_len > sizeof(sa_family_t)) {
        sendto(engine->ctl_fd, reply, strlen(reply), MSG_DONTWAIT,
               (struct sockaddr*)&from, from_len);
    }
}
