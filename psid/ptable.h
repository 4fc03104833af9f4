/*
 * ptable.h - a bounded table of pending entries (ptable.c), what psid's preload tables are
 * made of: each entry is found by its key in O(1) (a hash table keyed with SipHash under a
 * random key per table, so that keys a user chooses cannot pile into one bucket), counts
 * against its uid (at most per_uid entries of one uid but root, counted in O(1)) and against
 * the table (at most max), and has a deadline: the loop's timer calls the table's expire
 * function, which removes the entry (ptable_del) and frees it. The entry is embedded in the
 * owner's record; the table never allocates or frees records.
 */
#ifndef PSCLUSTER_PSID_PTABLE_H
#define PSCLUSTER_PSID_PTABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct loop;

struct pt_entry {
    uint64_t key;
    uint32_t uid;
    uint64_t timer; /* the loop's timer of its deadline (0: none) */
    struct ptable *t;
    struct pt_entry *hnext;       /* the next of its bucket */
    struct pt_entry *next, *prev; /* all entries, newest first */
};

struct pt_uid {
    uint32_t uid;
    unsigned n;
};

struct ptable {
    struct loop *loop;
    unsigned max, per_uid, n;
    void (*expire)(struct pt_entry *e); /* at its deadline; removes and frees it */
    uint8_t hkey[16];
    struct pt_entry **buckets;
    unsigned nbuckets;   /* a power of two, fixed: max rounded up */
    struct pt_uid *uids; /* the uids with entries (open addressing, 2 * per-uid room) */
    unsigned nuidslots;
    struct pt_entry *all;
};

/* At most max entries, per_uid of one uid but root's (0: no share). 0, or -1 (ENOMEM). */
int ptable_init(struct ptable *t, struct loop *loop, unsigned max, unsigned per_uid,
                void (*expire)(struct pt_entry *e));
/* Cancels the entries' timers and forgets them (their records are their owners'). */
void ptable_fini(struct ptable *t);
/* The key of bytes (SipHash under the table's key). */
uint64_t ptable_key(const struct ptable *t, const void *bytes, size_t len);
/* Whether one more entry of uid fits. */
bool ptable_room(const struct ptable *t, uint32_t uid);
/* Adds e (key, uid; deadline on the loop's clock, 0: none). 0, or -1 with errno ENOBUFS
 * when a bound is reached, EINVAL for uid UINT32_MAX (no process has it; the table's mark
 * of a free count slot) (e is not added). */
int ptable_add(struct ptable *t, struct pt_entry *e, uint64_t key, uint32_t uid, uint64_t deadline);
/* Removes e and cancels its timer (nothing else: its record stays its owner's). */
void ptable_del(struct pt_entry *e);
/* A new deadline for e (0: none). */
void ptable_rearm(struct pt_entry *e, uint64_t deadline);
/* The newest entry of key, or NULL; the next of the same key after e, or NULL. */
struct pt_entry *ptable_find(const struct ptable *t, uint64_t key);
struct pt_entry *ptable_find_next(const struct pt_entry *e);
/* Entries of uid now. */
unsigned ptable_of_uid(const struct ptable *t, uint32_t uid);

#define PT_OWNER(e, type, member) ((type *)((char *)(e)-offsetof(type, member)))

#endif
