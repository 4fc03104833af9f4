/*
 * psmsg.h - the message format of psid's protocols: between daemons (one message per RDP
 * message) and between psid and its local clients (framed on a UNIX stream socket).
 *
 * A message is a 12-byte header and a sequence of fields; all integers big-endian:
 *
 *   off size  header                 field (repeated)
 *     0    1  version (1)              0  2  tag
 *     1    1  flags (0)                2  2  0
 *     2    2  type                     4  4  len
 *     4    4  length (whole message)   8 len value
 *     8    4  id (replies echo it)
 *
 * A field's value is an integer (4 or 8 bytes), a string (no NUL inside, not terminated),
 * raw bytes, or a record: itself a sequence of fields. Unknown tags are skipped, which is how
 * the protocol grows. psmsg_parse checks every length before anything reads a field, so
 * getters never go out of bounds. Fuzz target: test/fuzz/fuzz_psmsg.c.
 */
#ifndef PSCLUSTER_PSMSG_H
#define PSCLUSTER_PSMSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PSMSG_VERSION 1
#define PSMSG_HDR     12
#define PSMSG_FHDR    8
#define PSMSG_MAX     (1u << 20) /* largest message */
#define PSMSG_DEPTH   4          /* nesting levels, the body included: records nest 3 deep */
#define PSMSG_RECORD  0x8000     /* tags with this bit hold records */

/* A validated sequence of fields (a message body or a record). */
struct psmsg_view {
    const uint8_t *p;
    size_t len;
};

struct psmsg {
    uint16_t type;
    uint32_t id;
    uint32_t length;
    struct psmsg_view body;
};

struct psmsg_field {
    uint16_t tag;
    uint32_t len;
    const uint8_t *val;
};

/* Validate and view a whole message of n bytes. 0, or -1 with errno EBADMSG (malformed),
 * EPROTO (other version) or EMSGSIZE (over PSMSG_MAX). */
int psmsg_parse(const uint8_t *buf, size_t n, struct psmsg *m);
/* Length of the message starting at buf once its header is there (n >= PSMSG_HDR), for
 * stream framing; 0 if the header is invalid. */
uint32_t psmsg_frame_len(const uint8_t *buf, size_t n);

/* Iterate: *pos starts at 0; returns false at the end. */
bool psmsg_next(const struct psmsg_view *v, size_t *pos, struct psmsg_field *f);
/* First field with this tag. */
bool psmsg_find(const struct psmsg_view *v, uint16_t tag, struct psmsg_field *f);
int psmsg_get_u32(const struct psmsg_view *v, uint16_t tag, uint32_t *out);
int psmsg_get_u64(const struct psmsg_view *v, uint16_t tag, uint64_t *out);
/* Copy a string field into out (NUL-terminated); -1 if missing, too long or has a NUL. */
int psmsg_get_str(const struct psmsg_view *v, uint16_t tag, char *out, size_t outsz);
/* A field's value as a string: -1 if it holds a NUL or does not fit. */
int psmsg_field_str(const struct psmsg_field *f, char *out, size_t outsz);
int psmsg_field_u32(const struct psmsg_field *f, uint32_t *out);
int psmsg_field_u64(const struct psmsg_field *f, uint64_t *out);
/* View a record field (validated by psmsg_parse already). */
struct psmsg_view psmsg_record(const struct psmsg_field *f);

/* Building: a growing buffer; errors are sticky and reported by psmsg_end. */
struct psmsg_buf {
    uint8_t *data;
    size_t len, cap;
    size_t open[PSMSG_DEPTH]; /* offsets of open records */
    int depth;
    int err;     /* first error (errno value); 0: none */
    size_t need; /* the message's length had it fit: len, or more after EMSGSIZE */
};

void psmsg_begin(struct psmsg_buf *b, uint16_t type, uint32_t id);
void psmsg_put_u32(struct psmsg_buf *b, uint16_t tag, uint32_t v);
void psmsg_put_u64(struct psmsg_buf *b, uint16_t tag, uint64_t v);
void psmsg_put_str(struct psmsg_buf *b, uint16_t tag, const char *s);
void psmsg_put_bytes(struct psmsg_buf *b, uint16_t tag, const void *p, size_t n);
void psmsg_record_begin(struct psmsg_buf *b, uint16_t tag);
void psmsg_record_end(struct psmsg_buf *b);
/* Finish the message: 0 and b->data/b->len hold it, or -1 (ENOMEM, EMSGSIZE, EINVAL). */
int psmsg_end(struct psmsg_buf *b);
/* Set the id of a message psmsg_end finished (a client numbers its requests as it sends
 * them). */
void psmsg_set_id(struct psmsg_buf *b, uint32_t id);
void psmsg_buf_free(struct psmsg_buf *b);

#endif
