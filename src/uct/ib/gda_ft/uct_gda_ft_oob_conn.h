/*
 * gda_ft UCT transport: the out-of-band channel's receive side, the
 * connections its listener accepted (uct_gda_ft_oob_conn.c), as the
 * interface drives them.
 */
#ifndef UCT_GDA_FT_OOB_CONN_H_
#define UCT_GDA_FT_OOB_CONN_H_

#include "uct_gda_ft_oob_types.h"


/* The listener's handler: accepts every waiting connection and watches it */
void uct_gda_ft_oob_accept_event(int fd, ucs_event_set_types_t events,
                                 void *arg);

/* The async timer's pass over the interface's connections (arg) */
void uct_gda_ft_oob_async_timer(int id, ucs_event_set_types_t events,
                                void *arg);

/* Reads and dispatches what a connection holds, within a bound; from the
 * async context (async 1) only handlers that allow it run. Returns the
 * messages dispatched. */
unsigned uct_gda_ft_oob_conn_progress(uct_gda_ft_oob_conn_t *conn,
                                      int async);

/* Removes a connection's handler, once a call in progress returns */
void uct_gda_ft_oob_conn_unwatch(uct_gda_ft_oob_conn_t *conn);

/* Empties the async context's queue of events that met it blocked */
void uct_gda_ft_oob_drain_missed(ucs_async_context_t *async);

/* Frees an ended connection: handler, fd, buffer */
void uct_gda_ft_oob_conn_free(uct_gda_ft_oob_conn_t *conn);

#endif
