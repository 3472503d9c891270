/*
 * Software HCA fault injection: port down/up (API, schedule in the
 * environment, carrier of the network interface), seeded packet
 * drop/delay/reorder and the "responses lost" mode. The control socket
 * that drives them from outside is gda_ft_soft_ctl.c.
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
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

gda_ft_soft_port_t *gda_ft_soft_port_get(gda_ft_hca_dev_t *hca_dev,
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

ucs_status_t gda_ft_soft_port_set_up_locked(gda_ft_hca_dev_t *dev,
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
const char *gda_ft_soft_fault_invalid(const gda_ft_soft_fault_t *fault)
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

/*
 * The kernel's notices of link and address changes (rtnetlink), so that the
 * link check runs when one comes instead of every LINK_CHECK: the check
 * (getifaddrs, a netlink dump of every address) took 84 us on average and
 * up to ms on these machines, in the engine's thread between two passes,
 * which is a silence of every QP of the process.
 */
void gda_ft_soft_link_watch_open(int epfd)
{
    gda_ft_soft_engine_t *engine = &gda_ft_soft_engine;
    struct sockaddr_nl addr      = {.nl_family = AF_NETLINK};
    struct epoll_event ev        = {0};
    int fd;

    engine->link_changed = 1;
    fd = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC,
                NETLINK_ROUTE);
    if (fd < 0) {
        ucs_debug("soft HCA: no rtnetlink socket (%m): the link check runs "
                  "every LINK_CHECK");
        return;
    }
    addr.nl_groups = RTMGRP_LINK | RTMGRP_IPV4_IFADDR;
    if (bind(fd, (struct sockaddr*)&addr, sizeof(addr)) < 0) {
        ucs_debug("soft HCA: rtnetlink bind failed (%m): the link check "
                  "runs every LINK_CHECK");
        close(fd);
        return;
    }
    ev.events   = EPOLLIN;
    ev.data.ptr = engine;   /* wakes the engine; handled by housekeeping */
    epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
    engine->link_fd            = fd;
    engine->last_link_check_ns = 0;   /* the first check comes at once */
}

void gda_ft_soft_link_watch_close(void)
{
    gda_ft_soft_engine_t *engine = &gda_ft_soft_engine;

    if (engine->link_fd >= 0) {
        close(engine->link_fd);
        engine->link_fd = -1;
    }
}

/* Reads the notices that came: any one (or a lost one) asks for a check */
void gda_ft_soft_link_watch_read(void)
{
    gda_ft_soft_engine_t *engine = &gda_ft_soft_engine;
    char buf[8192];
    ssize_t n;

    while ((n = recv(engine->link_fd, buf, sizeof(buf), 0)) != 0) {
        if ((n > 0) || (errno == ENOBUFS)) {
            engine->link_changed = 1;   /* ENOBUFS: some were lost */
        } else if (errno != EINTR) {
            break;                      /* EAGAIN: all read */
        }
    }
}

int gda_ft_soft_link_check_due(uint64_t now)
{
    gda_ft_soft_engine_t *engine = &gda_ft_soft_engine;

    if (engine->link_fd >= 0) {
        return engine->link_changed &&
               ((now - engine->last_link_check_ns) >=
                GDA_FT_SOFT_LINK_CHECK_GAP_NS);
    }
    return (now - engine->last_link_check_ns) >=
           (uint64_t)(engine->config.link_check * 1e9);
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
    engine->link_changed       = 0;
    __atomic_store_n(&engine->link_checks, engine->link_checks + 1,
                     __ATOMIC_RELAXED);   /* read by the stats */

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
