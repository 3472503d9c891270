/*
 * gda_ft UCT transport: byte layouts of everything that leaves the process.
 *
 * Three blobs travel between peers, inside UCP's wireup messages and packed
 * remote keys:
 *
 *  - the packed remote key (uct_md_mkey_pack -> uct_rkey_unpack): the keys
 *    of one registration on the primary HCA and on its backup;
 *  - the device address (uct_iface_get_device_address): both ports' GIDs
 *    and LIDs;
 *  - the endpoint address (uct_ep_get_address): its mailbox, its control
 *    QPs and those of its host channel, and how many channels it has.
 *
 * The endpoint's channel directory, the QP numbers of its device channels,
 * goes from mailbox to mailbox after the address (uct_gda_ft_chan.c).
 * The out-of-band wireup channel (uct_gda_ft_oob.c) adds its own address and
 * the header of each message on its TCP connections.
 *
 * Every blob starts with a version byte; multi-byte fields are big-endian;
 * reserved bits and bytes are zero. The unpack functions take the length of
 * the buffer they are given, never read past it, and refuse short, foreign,
 * corrupt or newer buffers with a status and a reason string; they never log,
 * so that callers choose how loud a bad peer is and fuzzers stay quiet.
 */
#ifndef UCT_GDA_FT_WIRE_H_
#define UCT_GDA_FT_WIRE_H_

#include "gda_ft_dev_def.h"

#include <ucs/sys/compiler_def.h>
#include <ucs/sys/math.h>
#include <ucs/type/status.h>
#include <stddef.h>
#include <stdint.h>


/* Bumped whenever a layout below or its meaning changes */
#define UCT_GDA_FT_WIRE_VERSION      1

#define UCT_GDA_FT_WIRE_GID_LEN      16
#define UCT_GDA_FT_WIRE_QPN_MASK     0xffffffu

/* First two bytes of every packed rkey: "gF" */
#define UCT_GDA_FT_RKEY_MAGIC        0x6746u

/* Seed of the rkey check value, so that a zero-filled buffer fails it */
#define UCT_GDA_FT_RKEY_CHECK_SEED   0x9e3779b9u


/* Flags of the remote key and the device address */
enum {
    /* The backup path exists: backup key or port address are valid */
    UCT_GDA_FT_WIRE_F_BACKUP = 1u << 0,
    /* Device address forms, exactly one of them */
    UCT_GDA_FT_WIRE_F_IPV4   = 1u << 1,
    UCT_GDA_FT_WIRE_F_GID    = 1u << 2,
    /* The device address of an out-of-band channel, never of an HCA */
    UCT_GDA_FT_WIRE_F_OOB    = 1u << 7
};

#define UCT_GDA_FT_WIRE_F_ALL      UCT_GDA_FT_WIRE_F_BACKUP
#define UCT_GDA_FT_WIRE_F_DEV_ALL  (UCT_GDA_FT_WIRE_F_BACKUP | \
                                    UCT_GDA_FT_WIRE_F_IPV4 | \
                                    UCT_GDA_FT_WIRE_F_GID)


/*
 * Packed remote key, 16 bytes. uct_rkey_t holds both keys:
 * key[0] | (uint64_t)key[1] << 32.
 */
typedef struct uct_gda_ft_wire_rkey {
    uint16_t magic;      /*  0: UCT_GDA_FT_RKEY_MAGIC */
    uint8_t  version;    /*  2: UCT_GDA_FT_WIRE_VERSION */
    uint8_t  flags;      /*  3: UCT_GDA_FT_WIRE_F_BACKUP */
    uint32_t key[2];     /*  4: rkey on the primary HCA, on the backup HCA
                               (0 without backup) */
    uint32_t check;      /* 12: ucs_crc32() of bytes 0..11, seeded */
} UCS_S_PACKED uct_gda_ft_wire_rkey_t;


/*
 * Device address: where the peer's two ports are. UCP (address format v1)
 * carries at most 31 bytes of device address, less than two full GIDs, so
 * the address has a 2-byte header and one of two compact bodies:
 *
 *  - IPV4: RoCEv2 over IPv4 (and the software HCA): each GID is the
 *    IPv4-mapped ::ffff:a.b.c.d, carried as its 4 address bytes; 10 bytes;
 *  - GID: InfiniBand, or RoCE whose two GIDs share their 64-bit subnet
 *    prefix: the LIDs, the prefix once, both interface IDs; 30 bytes.
 *
 * Every interface packs the smallest form that holds its ports; a peer of
 * the other form is on another kind of fabric and is unreachable.
 */
typedef struct uct_gda_ft_wire_dev_addr_hdr {
    uint8_t  version;    /*  0: UCT_GDA_FT_WIRE_VERSION */
    uint8_t  flags;      /*  1: F_BACKUP, and F_IPV4 or F_GID */
} UCS_S_PACKED uct_gda_ft_wire_dev_addr_hdr_t;

typedef struct uct_gda_ft_wire_dev_addr_ipv4 {
    uct_gda_ft_wire_dev_addr_hdr_t hdr;
    uint8_t  ipv4[2][4]; /*  2: primary, backup (0.0.0.0 without backup),
                               network byte order */
} UCS_S_PACKED uct_gda_ft_wire_dev_addr_ipv4_t;

typedef struct uct_gda_ft_wire_dev_addr_gid {
    uct_gda_ft_wire_dev_addr_hdr_t hdr;
    uint16_t lid[2];     /*  2: primary, backup; big-endian, 0 on RoCE */
    uint8_t  prefix[8];  /*  6: subnet prefix of both GIDs */
    uint8_t  iid[2][8];  /* 14: interface IDs: primary, backup */
} UCS_S_PACKED uct_gda_ft_wire_dev_addr_gid_t;

/* Largest device address; UCP's limit is 31 */
#define UCT_GDA_FT_WIRE_DEV_ADDR_MAX  sizeof(uct_gda_ft_wire_dev_addr_gid_t)


/*
 * Endpoint address: its mailbox and control QPs, its channel count, and
 * the QPNs of the four QPs of its host channel (channel 0). A channel is
 * posted on by one side only: our initiator QPs connect to the peer's
 * target QPs of the same channel, and the peer's initiators to our
 * targets, so that a guardian can fence and re-arm the far end of its own
 * paths without touching the peer's posters. Without a backup HCA the
 * backup QPs are placeholders, never connected: whether both ends have a
 * backup is in the device addresses.
 *
 * UCP's address format v1 (its default) carries at most 63 bytes of
 * endpoint address, 4 channels' worth: the device channels' QPNs travel
 * after the address, in the endpoint's channel directory
 * (uct_gda_ft_wire_chan_dir_t), which each end writes into the peer's
 * mailbox over a control QP once it is connected.
 */
typedef struct uct_gda_ft_wire_ep_addr {
    uint8_t  version;      /*  0: UCT_GDA_FT_WIRE_EP_ADDR_VERSION */
    uint8_t  num_chan;     /*  1: its channels, host and device,
                                  1..CHAN_MAX */
    uint32_t mbox_rkey[2]; /*  2: the mailbox's rkey on each path,
                                  big-endian (0 without a backup HCA) */
    uint64_t mbox_va;      /* 10: the endpoint's mailbox, big-endian */
    uint8_t  ctl_qpn[2][3];/* 18: its control QPs: primary, backup;
                                  24-bit big-endian */
} UCS_S_PACKED uct_gda_ft_wire_ep_addr_t;

/* The endpoint address's version, apart from the other blobs': it changes
 * with its layout or with the layout of the mailbox it points at
 * (uct_gda_ft_mbox_t), which the peer writes into */
#define UCT_GDA_FT_WIRE_EP_ADDR_VERSION 4

typedef struct uct_gda_ft_wire_chan {
    uint8_t  init_qpn[2][3];   /*  0: primary, backup; 24-bit big-endian */
    uint8_t  target_qpn[2][3]; /*  6 */
} UCS_S_PACKED uct_gda_ft_wire_chan_t;

/* Most device channels of an endpoint (UCX_GDA_FT_DEVICE_CHANNELS) */
#define UCT_GDA_FT_WIRE_DEV_CHAN_MAX 64
/* Most channels of an endpoint: its host channel and the device ones */
#define UCT_GDA_FT_WIRE_CHAN_MAX     (1 + UCT_GDA_FT_WIRE_DEV_CHAN_MAX)
/* The endpoint address: the header and the host channel, whatever the
 * channel count */
#define UCT_GDA_FT_WIRE_EP_ADDR_MAX  (sizeof(uct_gda_ft_wire_ep_addr_t) + \
                                      sizeof(uct_gda_ft_wire_chan_t))


/*
 * Channel directory of an endpoint: the QPNs of its device channels,
 * channel 1 first. Each end writes its own into its mailbox (dir_out) at
 * creation; once connected, it copies it into the peer's mailbox (dir_in)
 * with an RDMA WRITE over a control QP, then the push's epoch (dir_epoch).
 * The peer checks it against the address (count, mailbox), connects its
 * channels to the QPNs and answers in our dir_ack: a channel carries
 * traffic only once both ends connected it.
 */
typedef struct uct_gda_ft_wire_chan_dir {
    uint8_t  version;      /*  0: UCT_GDA_FT_WIRE_DIR_VERSION */
    uint8_t  num_chan;     /*  1: device channels that follow,
                                  1..DEV_CHAN_MAX */
    uint16_t length;       /*  2: bytes of the directory, this header
                                  included, big-endian */
    uint32_t check;        /*  4: ucs_crc32() of the directory with this
                                  field 0, seeded, big-endian */
    uint64_t mbox_va;      /*  8: the endpoint's mailbox, as its address
                                  says, big-endian */
} UCS_S_PACKED uct_gda_ft_wire_chan_dir_t;

#define UCT_GDA_FT_WIRE_DIR_VERSION     1
/* Seed of the directory's check value, so that zeros fail it */
#define UCT_GDA_FT_WIRE_DIR_CHECK_SEED  0x7f4a7c15u
#define UCT_GDA_FT_WIRE_DIR_MAX  (sizeof(uct_gda_ft_wire_chan_dir_t) + \
                                  UCT_GDA_FT_WIRE_DEV_CHAN_MAX * \
                                  sizeof(uct_gda_ft_wire_chan_t))


/*
 * Out-of-band channel: the device address says where it listens (6 bytes),
 * the interface address on which TCP port (2 bytes, big-endian). Its flags
 * byte is UCT_GDA_FT_WIRE_F_OOB, which an HCA's device address refuses.
 */
typedef struct uct_gda_ft_wire_oob_dev_addr {
    uint8_t  version;    /*  0: UCT_GDA_FT_WIRE_VERSION */
    uint8_t  flags;      /*  1: UCT_GDA_FT_WIRE_F_OOB */
    uint8_t  ipv4[4];    /*  2: network byte order */
} UCS_S_PACKED uct_gda_ft_wire_oob_dev_addr_t;

/* Every message on an out-of-band connection: this header, then length
 * bytes of active message payload */
typedef struct uct_gda_ft_wire_oob_hdr {
    uint8_t  magic;      /*  0: UCT_GDA_FT_OOB_MAGIC */
    uint8_t  version;    /*  1: UCT_GDA_FT_WIRE_VERSION */
    uint8_t  am_id;      /*  2: < UCT_AM_ID_MAX */
    uint8_t  reserved;   /*  3: 0 */
    uint32_t length;     /*  4: payload bytes, big-endian */
} UCS_S_PACKED uct_gda_ft_wire_oob_hdr_t;

#define UCT_GDA_FT_OOB_MAGIC        0x6fu   /* 'o' */
#define UCT_GDA_FT_WIRE_AM_ID_MAX   64      /* UCT_AM_ID_MAX */
#define UCT_GDA_FT_OOB_MAX_PAYLOAD  (64 * 1024)


/*
 * Active messages: SEND with immediate, immediate = seq << 6 | am_id. The
 * sequence number (26 bits, per endpoint) lets the receiver deliver every
 * message exactly once and in order across failovers and failbacks.
 */
#define UCT_GDA_FT_AM_ID_BITS      6
#define UCT_GDA_FT_AM_ID_MASK      (UCS_MASK(UCT_GDA_FT_AM_ID_BITS))
#define UCT_GDA_FT_AM_SEQ_BITS     (32 - UCT_GDA_FT_AM_ID_BITS)
#define UCT_GDA_FT_AM_SEQ_MASK     (UCS_MASK(UCT_GDA_FT_AM_SEQ_BITS))

/*
 * Mailbox of an endpoint, written by the peer's guardian with control
 * operations (RDMA WRITEs over the path that works; uct_gda_ft_chan_ctl.c):
 * the peer's question about the far end of one of its channel paths, and
 * its answer to ours; one pair per channel, so that channels that fail
 * together are settled together, and the last pair for the control QPs'
 * own re-arm (UCT_GDA_FT_WIRE_CTL_SLOT). Then the channel directories:
 * the peer's, as it wrote it over each control path (pushes over both
 * paths never write the same bytes), and our own, which we write to the
 * peer from here. Two pages, registered on both paths.
 */
typedef struct uct_gda_ft_mbox {
    struct uct_gda_ft_mbox_slot {
        volatile uint32_t req_tag;    /*  0: the question's epoch, written
                                          with its fields in one write */
        volatile uint32_t req;        /*  4: op << 16 | path */
        volatile uint32_t req_psn[2]; /*  8: re-arm: first PSN the peer
                                          sends, first PSN we send */
        volatile uint32_t req_epoch;  /* 16: written last, after them */
        volatile uint32_t beat;       /* 20: control slot: the peer's
                                          liveness probes land here (their
                                          count): its guardian runs */
        volatile uint64_t answer;     /* 24: UCT_GDA_FT_MBOX_ANSWER() to
                                          our question, one write */
    } chan[UCT_GDA_FT_WIRE_CHAN_MAX + 1];
    volatile uint64_t dir_ack[2];     /* per control path: the peer's
                                         UCT_GDA_FT_MBOX_ANSWER() to our
                                         directory, written over that
                                         path: the epoch of the push it
                                         took, refused (0: its channels are
                                         connected to ours) */
    volatile uint32_t dir_epoch[2];   /* per control path: the peer's
                                         pushes of its directory over it
                                         (their count), written after it */
    uint8_t           dir_in[2][UCT_GDA_FT_WIRE_DIR_MAX]; /* the peer's,
                                         as pushed over each control path */
    uint8_t           dir_out[UCT_GDA_FT_WIRE_DIR_MAX];   /* ours */
} uct_gda_ft_mbox_t;

/*
 * The peer's questions and answers may come over either control path, and
 * a late write over one may land after a newer one over the other. So a
 * question's fields carry its epoch (req_tag), and a question counts only
 * when its epoch is newer than the last one answered; an answer is one
 * aligned 64-bit word: the question's epoch, refused (0: done) and the
 * PSN (a fence: the one its end expected next).
 */
/* Questions (mailbox req: op << 16 | path) about the peer's end of a
 * channel path */
enum {
    UCT_GDA_FT_CHAN_ASK_FENCE = 1,   /* to ERR; the PSN it expected next */
    UCT_GDA_FT_CHAN_ASK_REARM = 2    /* RESET -> RTS with req_psn[] */
};

/* A question's kind and path, as its `req` word carries them */
#define UCT_GDA_FT_MBOX_REQ(_op, _path) (((uint32_t)(_op) << 16) | (_path))

#define UCT_GDA_FT_MBOX_ANSWER(_epoch, _refused, _psn) \
    (((uint64_t)(_epoch) << 32) | ((uint64_t)((_refused) & 0xff) << 24) | \
     ((_psn) & 0xffffff))
#define UCT_GDA_FT_MBOX_ANSWER_EPOCH(_a)   ((uint32_t)((_a) >> 32))
#define UCT_GDA_FT_MBOX_ANSWER_REFUSED(_a) ((unsigned)((_a) >> 24) & 0xff)
#define UCT_GDA_FT_MBOX_ANSWER_PSN(_a)     ((uint32_t)(_a) & 0xffffff)

/* The mailbox slot of the control QPs */
#define UCT_GDA_FT_WIRE_CTL_SLOT UCT_GDA_FT_WIRE_CHAN_MAX


/*
 * An epoch of the mailbox, which the peer's RDMA writes store after the
 * fields it announces: an acquire load, so that those fields are read
 * after it (on any CPU, and as ThreadSanitizer sees the software HCA's
 * placement)
 */
static inline uint32_t uct_gda_ft_mbox_epoch(const volatile uint32_t *epoch)
{
    return __atomic_load_n(epoch, __ATOMIC_ACQUIRE);
}

/* A question read from a mailbox slot */
typedef struct uct_gda_ft_mbox_question {
    uint32_t epoch;
    unsigned op;      /* UCT_GDA_FT_CHAN_ASK_* */
    unsigned path;
    uint32_t psn[2];
} uct_gda_ft_mbox_question_t;

/*
 * Reads the question in slot q if one newer than `seen` (the last one
 * answered, wrap-safe) is there whole: 1 with *question. 0 when there is
 * none (a late write of an older one is none), or its fields are not its
 * own yet: their tag says so before and after they are read.
 */
static inline int
uct_gda_ft_mbox_read_question(const volatile struct uct_gda_ft_mbox_slot *q,
                              uint32_t seen,
                              uct_gda_ft_mbox_question_t *question)
{
    uint32_t epoch = uct_gda_ft_mbox_epoch(&q->req_epoch);
    uint32_t req;

    if (((int32_t)(epoch - seen) <= 0) ||
        (uct_gda_ft_mbox_epoch(&q->req_tag) != epoch)) {
        return 0;
    }
    /* relaxed atomic loads: the peer's HCA may be writing them now */
    req              = __atomic_load_n(&q->req, __ATOMIC_RELAXED);
    question->psn[0] = __atomic_load_n(&q->req_psn[0], __ATOMIC_RELAXED);
    question->psn[1] = __atomic_load_n(&q->req_psn[1], __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (uct_gda_ft_mbox_epoch(&q->req_tag) != epoch) {
        return 0;
    }
    question->epoch = epoch;
    question->op    = req >> 16;
    question->path  = req & 0xffff;
    return 1;
}

/* Whether slot q holds the answer to our question `epoch`: 1 with
 * *refused_p and *psn_p, from one word */
static inline int
uct_gda_ft_mbox_read_answer(const volatile struct uct_gda_ft_mbox_slot *q,
                            uint32_t epoch, unsigned *refused_p,
                            uint32_t *psn_p)
{
    uint64_t answer = __atomic_load_n(&q->answer, __ATOMIC_ACQUIRE);

    if (UCT_GDA_FT_MBOX_ANSWER_EPOCH(answer) != epoch) {
        return 0;
    }
    *refused_p = UCT_GDA_FT_MBOX_ANSWER_REFUSED(answer);
    *psn_p     = UCT_GDA_FT_MBOX_ANSWER_PSN(answer);
    return 1;
}


/* File-scope size checks (UCS_STATIC_ASSERT works only inside functions) */
_Static_assert(sizeof(uct_gda_ft_wire_oob_dev_addr_t) == 6,
               "wire oob dev_addr size");
_Static_assert(sizeof(uct_gda_ft_wire_oob_hdr_t) == 8, "wire oob header size");
_Static_assert(sizeof(struct uct_gda_ft_mbox_slot) == 32, "mailbox slot size");
_Static_assert(offsetof(uct_gda_ft_mbox_t, dir_ack) ==
               32 * (UCT_GDA_FT_WIRE_CHAN_MAX + 1), "mailbox dir_ack offset");
_Static_assert(offsetof(uct_gda_ft_mbox_t, dir_in) % 8 == 0,
               "mailbox dir_in alignment");
_Static_assert(UCT_GDA_FT_WIRE_DIR_MAX % 8 == 0, "directory slot alignment");
_Static_assert(sizeof(uct_gda_ft_mbox_t) <= 8192,
               "mailbox beyond two pages");
_Static_assert(sizeof(uct_gda_ft_wire_rkey_t) == 16, "wire rkey size");
_Static_assert(sizeof(uct_gda_ft_wire_dev_addr_hdr_t) == 2,
               "wire dev_addr header size");
_Static_assert(sizeof(uct_gda_ft_wire_dev_addr_ipv4_t) == 10,
               "wire dev_addr ipv4 size");
_Static_assert(sizeof(uct_gda_ft_wire_dev_addr_gid_t) == 30,
               "wire dev_addr gid size");
_Static_assert(sizeof(uct_gda_ft_wire_ep_addr_t) == 24, "wire ep_addr size");
_Static_assert(sizeof(uct_gda_ft_wire_chan_t) == 12, "wire channel size");
_Static_assert(UCT_GDA_FT_WIRE_EP_ADDR_MAX == 36, "wire ep_addr max size");
_Static_assert(UCT_GDA_FT_WIRE_EP_ADDR_MAX <= 63,
               "endpoint address beyond UCP address v1's 63 bytes");
_Static_assert(sizeof(uct_gda_ft_wire_chan_dir_t) == 16,
               "wire channel directory header size");
_Static_assert(UCT_GDA_FT_WIRE_DIR_MAX == 16 + 64 * 12,
               "wire channel directory max size");
_Static_assert(UCT_GDA_FT_WIRE_DEV_CHAN_MAX <= 255,
               "device channel count beyond its byte");
_Static_assert(offsetof(uct_gda_ft_wire_ep_addr_t, mbox_va) == 10,
               "wire ep_addr mailbox offset");
_Static_assert(offsetof(uct_gda_ft_wire_rkey_t, check) == 12,
               "wire rkey check offset");
_Static_assert(offsetof(uct_gda_ft_wire_dev_addr_gid_t, iid) == 14,
               "wire dev_addr iid offset");


/* Unpacked forms, in host order */
typedef struct uct_gda_ft_rkey_info {
    uint32_t key[2];
    int      has_backup;
} uct_gda_ft_rkey_info_t;

typedef struct uct_gda_ft_dev_addr_info {
    uint8_t  gid[2][UCT_GDA_FT_WIRE_GID_LEN];
    uint16_t lid[2];
    int      has_backup;
} uct_gda_ft_dev_addr_info_t;

/* The QPNs of one channel of the peer */
typedef struct uct_gda_ft_chan_qpns {
    uint32_t init_qpn[2];
    uint32_t target_qpn[2];
} uct_gda_ft_chan_qpns_t;

typedef struct uct_gda_ft_ep_addr_info {
    uint64_t mbox_va;
    uint32_t mbox_rkey[2];
    uint32_t ctl_qpn[2];
    unsigned num_chan;     /* channels, 1..CHAN_MAX: host, then device */
    uct_gda_ft_chan_qpns_t host; /* channel 0 */
} uct_gda_ft_ep_addr_info_t;

/* An endpoint's channel directory: its device channels 1..num_chan */
typedef struct uct_gda_ft_chan_dir_info {
    uint64_t mbox_va;
    unsigned num_chan;     /* device channels, 1..DEV_CHAN_MAX */
    uct_gda_ft_chan_qpns_t chan[UCT_GDA_FT_WIRE_DEV_CHAN_MAX];
} uct_gda_ft_chan_dir_info_t;


/*
 * Pack functions: `max` is the room at buf; UCS_ERR_BUFFER_TOO_SMALL when it
 * is less than the layout, UCS_ERR_INVALID_PARAM for values the layout cannot
 * carry (a QPN above 24 bits, a backup key without the backup flag).
 */
ucs_status_t uct_gda_ft_wire_rkey_pack(const uct_gda_ft_rkey_info_t *info,
                                       void *buf, size_t max);

/* Size of the device address of these ports; 0 when no form holds them */
size_t uct_gda_ft_wire_dev_addr_size(const uct_gda_ft_dev_addr_info_t *info);

ucs_status_t
uct_gda_ft_wire_dev_addr_pack(const uct_gda_ft_dev_addr_info_t *info,
                              void *buf, size_t max);

ucs_status_t
uct_gda_ft_wire_ep_addr_pack(const uct_gda_ft_ep_addr_info_t *info,
                             void *buf, size_t max);

/* Size of a channel directory of num_chan device channels */
size_t uct_gda_ft_wire_chan_dir_size(unsigned num_chan);

ucs_status_t
uct_gda_ft_wire_chan_dir_pack(const uct_gda_ft_chan_dir_info_t *info,
                              void *buf, size_t max);


/*
 * Unpack functions: `length` is how many bytes buf holds. On failure *info
 * is untouched and *reason_p (when not NULL) points to a constant string
 * saying why: UCS_ERR_MESSAGE_TRUNCATED (shorter than the layout),
 * UCS_ERR_UNSUPPORTED (another version), UCS_ERR_INVALID_PARAM (foreign or
 * corrupt: bad magic, check value, flags, reserved or zero fields).
 */
ucs_status_t uct_gda_ft_wire_rkey_unpack(const void *buf, size_t length,
                                         uct_gda_ft_rkey_info_t *info,
                                         const char **reason_p);

ucs_status_t uct_gda_ft_wire_dev_addr_unpack(const void *buf, size_t length,
                                             uct_gda_ft_dev_addr_info_t *info,
                                             const char **reason_p);

ucs_status_t uct_gda_ft_wire_ep_addr_unpack(const void *buf, size_t length,
                                            uct_gda_ft_ep_addr_info_t *info,
                                            const char **reason_p);

/*
 * A directory of the peer whose address said `num_chan` device channels
 * and mailbox `mbox_va`: a directory of another count or endpoint is
 * refused (UCS_ERR_INVALID_PARAM), one whose length says it ends before
 * its channels, or that goes past `length`, too (UCS_ERR_MESSAGE_TRUNCATED)
 */
ucs_status_t uct_gda_ft_wire_chan_dir_unpack(const void *buf, size_t length,
                                             unsigned num_chan,
                                             uint64_t mbox_va,
                                             uct_gda_ft_chan_dir_info_t *info,
                                             const char **reason_p);


/* Out-of-band channel: address (IPv4 and port in network byte order) */
ucs_status_t uct_gda_ft_wire_oob_addr_pack(uint32_t ipv4_be, uint16_t port_be,
                                           void *dev_buf, size_t dev_max,
                                           void *iface_buf, size_t iface_max);

ucs_status_t uct_gda_ft_wire_oob_addr_unpack(const void *dev_buf,
                                             size_t dev_length,
                                             const void *iface_buf,
                                             size_t iface_length,
                                             uint32_t *ipv4_be,
                                             uint16_t *port_be,
                                             const char **reason_p);

void uct_gda_ft_wire_oob_hdr_pack(uint8_t am_id, uint32_t length,
                                  uct_gda_ft_wire_oob_hdr_t *hdr);

/* UCS_ERR_INVALID_PARAM: not a message of this channel, an AM id or a
 * length out of range; the stream cannot be trusted any more */
ucs_status_t uct_gda_ft_wire_oob_hdr_unpack(const void *buf, size_t length,
                                            uint8_t *am_id,
                                            uint32_t *payload_length,
                                            const char **reason_p);


/* The 64-bit uct_rkey_t of an unpacked key, and the key of one path */
static UCS_F_ALWAYS_INLINE uint64_t
uct_gda_ft_wire_rkey_to_uct(const uct_gda_ft_rkey_info_t *info)
{
    return (uint64_t)info->key[0] | ((uint64_t)info->key[1] << 32);
}

static UCS_F_ALWAYS_INLINE uint32_t
uct_gda_ft_wire_rkey_path(uint64_t uct_rkey, unsigned path)
{
    return (uint32_t)(uct_rkey >> (32 * path));
}

#endif
