/*
 * Helpers of the programs that drive the device API from UCP processes
 * (gda_ft_perf, the MoE example): whole reads and writes on their
 * rendezvous sockets, their options' numbers, a software HCA port's state for their faults, and
 * their GPU runners, loaded from beside the program.
 */
#ifndef GDA_FT_PROG_H_
#define GDA_FT_PROG_H_

#include <ucs/type/status.h>
#include <stddef.h>

/* 0, or -1 when the peer closed or an error occurred (errno) */
int gda_ft_prog_write_all(int fd, const void *buf, size_t len);
int gda_ft_prog_read_all(int fd, void *buf, size_t len);

/* A number of [min, max] in arg (any base strtoul takes); 0, or -1 when
 * arg is not one */
int gda_ft_prog_parse_uint(const char *arg, unsigned min, unsigned max,
                           unsigned *value_p);

/* Port 1 of software HCA dev, in this process, up or down;
 * UCS_ERR_NO_DEVICE when dev is none of this process's software HCAs */
ucs_status_t gda_ft_prog_soft_port(const char *dev, int up);

/* The software HCAs' statistics of this process (gda_ft_softctl's stats:
 * a line per port, then the engine's) into buf; UCS_ERR_NO_DEVICE without
 * a software HCA */
ucs_status_t gda_ft_prog_soft_stats(char *buf, size_t max);

/* The software HCAs' engine statistics of this process (the "engine
 * threads" line of gda_ft_softctl's stats) into buf; UCS_ERR_NO_DEVICE
 * without a software HCA */
ucs_status_t gda_ft_prog_soft_engine_stats(char *buf, size_t max);

/* dlopen()s name from the program's directory, or the one above it (a
 * libtool build keeps the program in .libs); NULL when it is in neither */
void *gda_ft_prog_open_beside(const char *name);

#endif
