/*
 * swim.c - SWIM membership as a pure state machine (swim.h has the interface and the
 * packet, docs/swim.md the protocol). Fuzz target: test/fuzz/fuzz_swim.c.
 */
#include "swim.h"

#include "bebytes.h"
#include "hbwire.h"

#include <math.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#define CONF_MAX   8 /* confirmations counted per suspicion */
#define RELAY_MAX  16
#define VERIFY_MAX 8 /* verdicts on older incarnations waiting to be checked */

void swim_key_derive(const uint8_t cluster_key[32], uint8_t swim_key[32])
{
    crypto_kdf_derive_from_key(swim_key, 32, 2, "pshbeat1", cluster_key);
}

size_t swim_encode(uint8_t out[SWIM_MAX_PKT], const struct swim_pkt *p, const uint8_t key[32])
{
    unsigned nu = p->nupd > SWIM_MAX_UPD ? SWIM_MAX_UPD : p->nupd;
    size_t len = SWIM_HDR + SWIM_UPD * nu;
    memset(out, 0, len + SWIM_MAC);
    out[0] = SWIM_VERSION;
    out[1] = p->type;
    out[3] = (uint8_t)nu;
    be_put32(out + 4, p->sender);
    be_put64(out + 8, p->boot);
    be_put64(out + 16, p->seq);
    be_put32(out + 24, p->inc);
    be_put32(out + 28, p->target);
    be_put32(out + 32, p->probe);
    memcpy(out + 40, p->info, SWIM_INFO);
    for (unsigned i = 0; i < nu; i++) {
        uint8_t *u = out + SWIM_HDR + SWIM_UPD * i;
        be_put32(u, p->upd[i].member);
        u[4] = p->upd[i].state;
        be_put32(u + 8, p->upd[i].inc);
        be_put32(u + 12, p->upd[i].by);
        be_put64(u + 16, p->upd[i].boot);
    }
    hb_mac(out + len, out, len, key);
    return len + SWIM_MAC;
}

int swim_decode(const uint8_t *b, size_t n, struct swim_pkt *p, const uint8_t key[32],
                const char **why)
{
    uint8_t m[SWIM_MAC];
    if (n < SWIM_HDR + SWIM_MAC) return *why = "length", -1;
    if (b[0] != SWIM_VERSION) return *why = "version", -1;
    if (b[1] < SWIM_PING || b[1] > SWIM_GOSSIP) return *why = "type", -1;
    if (b[2] || b[36] || b[37] || b[38] || b[39]) return *why = "reserved", -1;
    if (b[3] > SWIM_MAX_UPD) return *why = "count", -1;
    size_t len = SWIM_HDR + (size_t)SWIM_UPD * b[3];
    if (n != len + SWIM_MAC) return *why = "length", -1;
    hb_mac(m, b, len, key);
    if (sodium_memcmp(m, b + len, SWIM_MAC) != 0) return *why = "mac", -1;
    p->type = b[1];
    p->nupd = b[3];
    p->sender = be_get32(b + 4);
    p->boot = be_get64(b + 8);
    p->seq = be_get64(b + 16);
    p->inc = be_get32(b + 24);
    p->target = be_get32(b + 28);
    p->probe = be_get32(b + 32);
    memcpy(p->info, b + 40, SWIM_INFO);
    for (unsigned i = 0; i < p->nupd; i++) {
        const uint8_t *u = b + SWIM_HDR + SWIM_UPD * i;
        if (u[4] < SWIM_ALIVE || u[4] > SWIM_DEAD) return *why = "state", -1;
        if (u[5] || u[6] || u[7]) return *why = "reserved", -1;
        p->upd[i].member = be_get32(u);
        p->upd[i].state = u[4];
        p->upd[i].inc = be_get32(u + 8);
        p->upd[i].by = be_get32(u + 12);
        p->upd[i].boot = be_get64(u + 16);
    }
    return 0;
}

void swim_config_default(struct swim_config *c, uint32_t n, uint32_t self)
{
    *c = (struct swim_config){.n = n,
                              .self = self,
                              .period_ns = 100000000ull,
                              .ack_timeout_ns = 30000000ull,
                              .indirect_k = 3,
                              .suspect_min_ns = 300000000ull,
                              .suspect_max_ns = 800000000ull,
                              .suspect_confirm = 3,
                              .lhm_max = 4,
                              .retransmit_mult = 3,
                              .gossip_fanout = 2,
                              .spread_suspicion = false};
}

struct member {
    uint8_t state;
    bool in_bq, in_susp, verify;
    uint32_t inc, by, tx_left;
    uint64_t boot;
    /* suspicion: when it started, when it ends, who confirmed it */
    uint64_t susp_start, susp_end, buddy_at;
    uint32_t nconf, conf[CONF_MAX];
    /* replay window of packets from it */
    uint64_t rx_boot, rx_top, rx_win;
};

struct relay {
    bool used;
    uint32_t origin, target, origin_probe, probe;
    uint64_t end;
};

struct swim {
    struct swim_config c;
    uint8_t key[32];
    struct swim_io io;
    void *ctx;
    uint64_t rng, seq, due, last_call;
    uint8_t info[SWIM_INFO];
    struct member *m;
    uint32_t *order, norder, pos;
    uint32_t *bq, nbq;     /* members with an update to spread */
    uint32_t *susp, nsusp; /* members suspected */
    uint32_t tx_limit, lhm, probe_ctr;
    uint32_t verify[VERIFY_MAX], nverify;
    /* the probe of this period */
    bool probing, acked, ind_sent, urgent, told;
    uint32_t ptarget, pnum, nind, nacks, nack_by[8];
    uint64_t psent, next_period;
    struct relay relay[RELAY_MAX];
    struct swim_stats st;
};

static uint64_t rnd(struct swim *s)
{
    uint64_t z = (s->rng += 0x9e3779b97f4a7c15ull); /* splitmix64 */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint32_t rnd_below(struct swim *s, uint32_t n)
{
    return (uint32_t)(rnd(s) % n);
}

static void shuffle(struct swim *s)
{
    for (uint32_t i = s->norder; i > 1; i--) {
        uint32_t j = rnd_below(s, i), t = s->order[i - 1];
        s->order[i - 1] = s->order[j];
        s->order[j] = t;
    }
    s->pos = 0;
}

static uint64_t scaled(const struct swim *s, uint64_t ns)
{
    return ns * (s->lhm + 1);
}

static void health(struct swim *s, int delta)
{
    if (delta < 0 && s->lhm > 0) s->lhm--;
    if (delta > 0 && s->lhm < s->c.lhm_max) s->lhm++;
}

static void enqueue(struct swim *s, uint32_t i)
{
    struct member *m = &s->m[i];
    m->tx_left = s->tx_limit;
    if (!m->in_bq) {
        m->in_bq = true;
        s->bq[s->nbq++] = i;
    }
}

static void upd_of(const struct swim *s, uint32_t i, struct swim_upd *u)
{
    const struct member *m = &s->m[i];
    *u = (struct swim_upd){
        .member = i, .state = m->state, .inc = m->inc, .by = m->by, .boot = m->boot};
}

/* Piggyback: the receiver's own entry first when we suspect it or hold it dead (it learns
 * so and can refute: Lifeguard's buddy system), then the updates sent least often. */
static void piggyback(struct swim *s, uint32_t to, struct swim_pkt *p)
{
    p->nupd = 0;
    if (to != s->c.self && s->m[to].state != SWIM_ALIVE) upd_of(s, to, &p->upd[p->nupd++]);
    while (p->nupd < SWIM_MAX_UPD) {
        uint32_t best = UINT32_MAX, bi = 0;
        for (uint32_t k = 0; k < s->nbq; k++) {
            uint32_t i = s->bq[k];
            bool taken = false;
            for (unsigned j = 0; j < p->nupd; j++) taken |= p->upd[j].member == i;
            if (taken || s->m[i].tx_left == 0) continue;
            if (best == UINT32_MAX || s->m[i].tx_left > s->m[best].tx_left) best = i, bi = k;
        }
        if (best == UINT32_MAX) break;
        upd_of(s, best, &p->upd[p->nupd++]);
        if (--s->m[best].tx_left == 0) {
            s->m[best].in_bq = false;
            s->bq[bi] = s->bq[--s->nbq];
        }
    }
}

static void send_pkt(struct swim *s, uint32_t to, uint8_t type, uint32_t target, uint32_t probe)
{
    struct swim_pkt p = {.type = type,
                         .sender = s->c.self,
                         .boot = s->m[s->c.self].boot,
                         .seq = ++s->seq,
                         .inc = s->m[s->c.self].inc,
                         .target = target,
                         .probe = probe};
    memcpy(p.info, s->info, SWIM_INFO);
    piggyback(s, to, &p);
    uint8_t buf[SWIM_MAX_PKT];
    size_t len = swim_encode(buf, &p, s->key);
    s->st.sent++;
    s->io.send(s->ctx, to, buf, len);
}

static void set_state(struct swim *s, uint32_t i, uint8_t to, bool restarted)
{
    struct member *m = &s->m[i];
    uint8_t from = m->state;
    m->state = to;
    if (to != SWIM_SUSPECT) m->nconf = 0;
    if (from != to || restarted)
        s->io.change(s->ctx, i, (enum swim_state)from, (enum swim_state)to, restarted);
}

/* Lifeguard's dynamic suspicion: max with no confirmation, down to min with
 * suspect_confirm independent ones, logarithmically. */
static uint64_t susp_timeout(const struct swim *s, uint32_t nconf)
{
    const struct swim_config *c = &s->c;
    if (c->suspect_max_ns <= c->suspect_min_ns || c->suspect_confirm == 0) return c->suspect_min_ns;
    if (nconf >= c->suspect_confirm) return c->suspect_min_ns;
    double f = log((double)nconf + 1) / log((double)c->suspect_confirm + 1);
    uint64_t cut = (uint64_t)((double)(c->suspect_max_ns - c->suspect_min_ns) * f);
    return c->suspect_max_ns - cut;
}

/* Another member's independent suspicion; true when it was new. */
static bool confirm(struct swim *s, uint32_t i, uint32_t by)
{
    struct member *m = &s->m[i];
    for (uint32_t k = 0; k < m->nconf; k++)
        if (m->conf[k] == by) return false;
    if (m->nconf >= CONF_MAX) return false;
    m->conf[m->nconf++] = by;
    m->by = by;
    m->susp_end = m->susp_start + susp_timeout(s, m->nconf - 1);
    return true;
}

static void suspect(struct swim *s, uint32_t i, uint32_t by, uint64_t now)
{
    struct member *m = &s->m[i];
    set_state(s, i, SWIM_SUSPECT, false);
    m->susp_start = now;
    m->nconf = 0;
    confirm(s, i, by);
    if (!m->in_susp) {
        m->in_susp = true;
        s->susp[s->nsusp++] = i;
    }
    s->st.suspicions++;
    if (s->c.spread_suspicion) enqueue(s, i);
}

/* An update's boot 0 is a member whose boot its sender did not know yet (no word from it
 * yet): it speaks of whichever boot is current. */
static void apply(struct swim *s, const struct swim_upd *upd, uint64_t now)
{
    struct member *m = &s->m[upd->member];
    struct swim_upd cur = *upd;
    const struct swim_upd *u = &cur;
    /* a verdict by a member that never heard from this one, which we have heard: its probes
     * may have run before the member started (a cluster starting); see for ourselves */
    if (!upd->boot && m->boot && upd->state == SWIM_DEAD && upd->member != s->c.self) {
        if (m->state != SWIM_DEAD && !m->verify && s->nverify < VERIFY_MAX) {
            m->verify = true;
            s->verify[s->nverify++] = upd->member;
        }
        return;
    }
    if (!cur.boot) cur.boot = m->boot;
    if (u->member == s->c.self) { /* refute: only we raise our incarnation */
        if (u->state == SWIM_ALIVE || u->boot != m->boot) return;
        s->told = true; /* the sender holds a wrong view of us: answer it */
        if (u->inc < m->inc) return;
        m->inc = u->inc + 1;
        s->st.refutes++;
        health(s, +1);
        /* a dead verdict was spread to all, so is its refutation, at once */
        if (u->state == SWIM_DEAD || s->c.spread_suspicion) {
            s->urgent = true;
            enqueue(s, u->member);
        }
        return;
    }
    if (u->boot < m->boot) return;
    if (u->boot > m->boot) { /* a new start: the old one is gone, whatever is said now */
        bool restarted = m->boot != 0;
        /* first word from the member itself: everyone hears it so, nothing to spread */
        bool news = restarted || u->by != u->member || u->state != SWIM_ALIVE;
        m->boot = u->boot;
        m->inc = u->inc;
        m->by = u->by;
        if (u->state == SWIM_SUSPECT) {
            if (restarted) set_state(s, u->member, SWIM_ALIVE, true);
            suspect(s, u->member, u->by, now);
        } else {
            set_state(s, u->member, u->state, restarted);
            if (news) enqueue(s, u->member);
            s->urgent |= news;
        }
        return;
    }
    switch (u->state) {
    case SWIM_ALIVE: {
        if (u->inc <= m->inc) return;
        bool was_dead = m->state == SWIM_DEAD;
        m->inc = u->inc;
        set_state(s, u->member, SWIM_ALIVE, false);
        if (was_dead || s->c.spread_suspicion) enqueue(s, u->member);
        s->urgent |= was_dead;
        return;
    }
    case SWIM_SUSPECT:
        if (u->inc < m->inc || (m->state == SWIM_DEAD && u->inc == m->inc)) return;
        if (m->state == SWIM_SUSPECT && u->inc == m->inc) {
            if (confirm(s, u->member, u->by) && s->c.spread_suspicion) enqueue(s, u->member);
            return;
        }
        m->inc = u->inc;
        suspect(s, u->member, u->by, now);
        return;
    case SWIM_DEAD:
        if (m->state == SWIM_DEAD) return;
        if (u->inc < m->inc) {
            /* a verdict on an older incarnation: its author never heard a refutation that
             * went to others only, and the verdict may still be newer than that refutation;
             * see for ourselves, with the next probe */
            if (!m->verify && s->nverify < VERIFY_MAX) {
                m->verify = true;
                s->verify[s->nverify++] = u->member;
            }
            return;
        }
        m->inc = u->inc;
        m->by = u->by;
        set_state(s, u->member, SWIM_DEAD, false);
        enqueue(s, u->member);
        s->urgent = true;
        return;
    }
}

struct swim *swim_new(const struct swim_config *c, const uint8_t key[32], uint64_t boot,
                      uint64_t seed, const struct swim_io *io, void *ctx, uint64_t now)
{
    if (c->n == 0 || c->self >= c->n || !boot || c->period_ns == 0) return NULL;
    struct swim *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->c = *c;
    memcpy(s->key, key, 32);
    s->io = *io;
    s->ctx = ctx;
    s->rng = seed;
    s->m = calloc(c->n, sizeof *s->m);
    s->order = calloc(c->n, sizeof *s->order);
    s->bq = calloc(c->n, sizeof *s->bq);
    s->susp = calloc(c->n, sizeof *s->susp);
    if (!s->m || !s->order || !s->bq || !s->susp) {
        swim_free(s);
        return NULL;
    }
    for (uint32_t i = 0; i < c->n; i++) {
        s->m[i].state = SWIM_ALIVE; /* configured members are presumed alive until probed */
        if (i != c->self) s->order[s->norder++] = i;
    }
    s->m[c->self].boot = boot;
    uint32_t lg = 0;
    while ((1ull << lg) < (uint64_t)c->n + 1) lg++;
    s->tx_limit = c->retransmit_mult * (lg ? lg : 1);
    shuffle(s);
    /* spread the members' first probes over a period */
    s->next_period = now + rnd(s) % c->period_ns;
    s->due = s->next_period;
    s->last_call = now;
    return s;
}

void swim_free(struct swim *s)
{
    if (!s) return;
    free(s->m);
    free(s->order);
    free(s->bq);
    free(s->susp);
    free(s);
}

static bool probe_next(struct swim *s, uint32_t *target)
{
    while (s->nverify) { /* verdicts to check first */
        uint32_t i = s->verify[--s->nverify];
        s->m[i].verify = false;
        if (s->m[i].state == SWIM_ALIVE) return *target = i, true;
    }
    for (uint32_t tries = 0; tries <= s->norder; tries++) {
        if (s->pos >= s->norder) shuffle(s);
        if (s->norder == 0) return false;
        uint32_t i = s->order[s->pos++];
        if (s->m[i].state != SWIM_DEAD) return *target = i, true;
    }
    return false;
}

/* A random member that is alive and none of not1, not2. */
static bool pick_alive(struct swim *s, uint32_t not1, uint32_t not2, uint32_t *out)
{
    for (int tries = 0; tries < 8; tries++) {
        uint32_t i = rnd_below(s, s->c.n);
        if (i != s->c.self && i != not1 && i != not2 && s->m[i].state == SWIM_ALIVE)
            return *out = i, true;
    }
    return false;
}

/* A packet for member i alone, at most one a period: it carries our header, and its entry
 * first when we suspect it or hold it dead. */
static bool tell(struct swim *s, uint32_t i, uint64_t now)
{
    struct member *m = &s->m[i];
    if (m->buddy_at && now < m->buddy_at + s->c.period_ns) return false;
    m->buddy_at = now;
    send_pkt(s, i, SWIM_GOSSIP, 0, 0);
    return true;
}

/* Lifeguard's buddy system: a member we suspect or hold dead hears so from us directly, so
 * that it can refute at once. */
static void buddy(struct swim *s, uint32_t i, uint64_t now)
{
    if (s->m[i].state != SWIM_ALIVE) (void)tell(s, i, now);
}

/* News that must reach everyone soon (a dead verdict, its refutation, a restart) goes out at
 * once to fanout + 1 members, each of which does the same when it is news to it: a flood in
 * hops, not in periods, which costs each member fanout + 1 packets per event. */
static void push(struct swim *s, uint32_t not )
{
    if (!s->urgent) return;
    s->urgent = false;
    for (uint32_t k = 0; k <= s->c.gossip_fanout; k++) {
        uint32_t to;
        if (pick_alive(s, not, UINT32_MAX, &to)) send_pkt(s, to, SWIM_GOSSIP, 0, 0);
    }
}

static void end_probe(struct swim *s, uint64_t now)
{
    if (!s->probing) return;
    s->probing = false;
    if (s->acked) {
        health(s, -1);
        return;
    }
    health(s, +1);
    if (s->ind_sent && s->nacks < s->nind) health(s, +1); /* Lifeguard: missing nacks */
    struct member *m = &s->m[s->ptarget];
    if (m->state == SWIM_ALIVE)
        suspect(s, s->ptarget, s->c.self, now);
    else if (m->state == SWIM_SUSPECT && confirm(s, s->ptarget, s->c.self) && s->c.spread_suspicion)
        enqueue(s, s->ptarget);
    /* the members that probed it for us and heard nothing either confirm (their nacks) */
    for (uint32_t k = 0; k < s->nacks && m->state == SWIM_SUSPECT; k++)
        confirm(s, s->ptarget, s->nack_by[k]);
    buddy(s, s->ptarget, now);
}

void swim_resync(struct swim *s, uint64_t now)
{
    s->probing = false;
    s->next_period = now;
    for (uint32_t k = 0; k < s->nsusp; k++) {
        struct member *m = &s->m[s->susp[k]];
        if (m->susp_end < now + 2 * s->c.period_ns) m->susp_end = now + 2 * s->c.period_ns;
    }
}

/* Called nowhere for a while and past due: this process was stopped or blocked, so it was
 * not listening either, and silence over that time judges nobody. */
static void deaf_check(struct swim *s, uint64_t now)
{
    if (now > s->due && now > s->last_call + 2 * s->c.period_ns) swim_resync(s, now);
    s->last_call = now;
}

void swim_tick(struct swim *s, uint64_t now)
{
    deaf_check(s, now);
    if (s->probing && !s->acked && !s->ind_sent &&
        now >= s->psent + scaled(s, s->c.ack_timeout_ns)) {
        s->ind_sent = true;
        for (uint32_t k = 0; k < s->c.indirect_k; k++) {
            uint32_t via;
            if (!pick_alive(s, s->ptarget, UINT32_MAX, &via)) break;
            send_pkt(s, via, SWIM_PING_REQ, s->ptarget, s->pnum);
            s->nind++;
            s->st.indirect++;
        }
    }
    if (now >= s->next_period) {
        end_probe(s, now);
        uint32_t t;
        if (probe_next(s, &t)) {
            s->probing = true;
            s->acked = s->ind_sent = false;
            s->nind = s->nacks = 0;
            s->ptarget = t;
            s->pnum = ++s->probe_ctr;
            s->psent = now;
            s->st.probes++;
            send_pkt(s, t, SWIM_PING, t, s->pnum);
        }
        for (uint32_t k = 0; k < s->c.gossip_fanout && s->nbq; k++) {
            uint32_t to;
            if (pick_alive(s, UINT32_MAX, UINT32_MAX, &to)) send_pkt(s, to, SWIM_GOSSIP, 0, 0);
        }
        s->next_period = now + scaled(s, s->c.period_ns);
    }
    for (uint32_t k = 0; k < s->nsusp;) {
        uint32_t i = s->susp[k];
        struct member *m = &s->m[i];
        if (m->state == SWIM_SUSPECT && now < m->susp_end) {
            buddy(s, i, now); /* again each period, in case a packet was lost */
            k++;
            continue;
        }
        if (m->state == SWIM_SUSPECT) {
            m->by = s->c.self;
            set_state(s, i, SWIM_DEAD, false);
            enqueue(s, i);
            s->urgent = true;
        }
        m->in_susp = false;
        s->susp[k] = s->susp[--s->nsusp];
    }
    for (int r = 0; r < RELAY_MAX; r++) {
        struct relay *rl = &s->relay[r];
        if (rl->used && now >= rl->end) { /* Lifeguard: tell the prober we tried */
            rl->used = false;
            send_pkt(s, rl->origin, SWIM_NACK, rl->target, rl->origin_probe);
        }
    }
    push(s, UINT32_MAX);
    s->due = swim_next(s);
}

uint64_t swim_period_next(const struct swim *s)
{
    return s->next_period;
}

uint64_t swim_next(const struct swim *s)
{
    uint64_t t = s->next_period;
    if (s->probing && !s->acked && !s->ind_sent) {
        uint64_t a = s->psent + scaled(s, s->c.ack_timeout_ns);
        if (a < t) t = a;
    }
    for (uint32_t k = 0; k < s->nsusp; k++) {
        const struct member *m = &s->m[s->susp[k]];
        if (m->susp_end < t) t = m->susp_end;
    }
    for (int r = 0; r < RELAY_MAX; r++)
        if (s->relay[r].used && s->relay[r].end < t) t = s->relay[r].end;
    return t;
}

static int drop(struct swim *s, enum swim_drop why)
{
    s->st.drops[why]++;
    return -1;
}

/* Replay protection: per sender, its boot and a window of the last 64 seqs. */
static bool fresh(struct member *m, uint64_t boot, uint64_t seq)
{
    if (boot < m->rx_boot || boot < m->boot) return false;
    if (boot > m->rx_boot) {
        m->rx_boot = boot;
        m->rx_top = seq;
        m->rx_win = 1;
        return true;
    }
    if (seq > m->rx_top) {
        uint64_t sh = seq - m->rx_top;
        m->rx_win = sh >= 64 ? 1 : (m->rx_win << sh) | 1;
        m->rx_top = seq;
        return true;
    }
    uint64_t d = m->rx_top - seq;
    if (d >= 64 || (m->rx_win & (1ull << d))) return false;
    m->rx_win |= 1ull << d;
    return true;
}

static void relay_ping(struct swim *s, const struct swim_pkt *p, uint64_t now)
{
    if (p->target == s->c.self || p->target == p->sender) return;
    struct relay *rl = &s->relay[0];
    for (int r = 0; r < RELAY_MAX; r++) { /* a free slot, or the one ending first */
        if (!s->relay[r].used) {
            rl = &s->relay[r];
            break;
        }
        if (s->relay[r].end < rl->end) rl = &s->relay[r];
    }
    uint64_t wait = s->c.period_ns > s->c.ack_timeout_ns ? s->c.period_ns - s->c.ack_timeout_ns
                                                         : s->c.ack_timeout_ns;
    *rl = (struct relay){.used = true,
                         .origin = p->sender,
                         .target = p->target,
                         .origin_probe = p->probe,
                         .probe = ++s->probe_ctr,
                         .end = now + wait * 4 / 5};
    send_pkt(s, p->target, SWIM_PING, p->target, rl->probe);
}

int swim_recv(struct swim *s, const uint8_t *buf, size_t len, uint64_t now)
{
    struct swim_pkt p;
    const char *why;
    if (swim_decode(buf, len, &p, s->key, &why) < 0)
        return drop(s, strcmp(why, "mac") ? SWIM_DROP_MALFORMED : SWIM_DROP_MAC);
    uint32_t n = s->c.n;
    if (p.sender >= n || p.sender == s->c.self || p.target >= n) return drop(s, SWIM_DROP_MEMBER);
    for (unsigned i = 0; i < p.nupd; i++)
        if (p.upd[i].member >= n || p.upd[i].by >= n) return drop(s, SWIM_DROP_MEMBER);
    if (!p.boot || !fresh(&s->m[p.sender], p.boot, p.seq)) return drop(s, SWIM_DROP_STALE);
    s->st.recv++;
    deaf_check(s, now);
    /* the sender speaks for itself: alive at its (boot, inc) */
    struct swim_upd self_upd = {
        .member = p.sender, .state = SWIM_ALIVE, .inc = p.inc, .by = p.sender, .boot = p.boot};
    apply(s, &self_upd, now);
    for (unsigned i = 0; i < p.nupd; i++) apply(s, &p.upd[i], now);
    if (s->io.heard) s->io.heard(s->ctx, p.sender, p.boot, p.info);
    /* it holds us suspect or dead: it hears our incarnation from us (our packet's header) */
    if (s->told) {
        s->told = false;
        /* twice: a lost answer leaves a suspicion whose timer may run out */
        if (p.type != SWIM_PING && tell(s, p.sender, now)) send_pkt(s, p.sender, SWIM_GOSSIP, 0, 0);
    }
    push(s, p.sender);
    /* it speaks without knowing what we hold of it (an ack to a ping carries it anyway) */
    if (p.type != SWIM_PING) buddy(s, p.sender, now);
    switch (p.type) {
    case SWIM_PING:
        if (p.target == s->c.self) send_pkt(s, p.sender, SWIM_ACK, s->c.self, p.probe);
        break;
    case SWIM_PING_REQ:
        relay_ping(s, &p, now);
        break;
    case SWIM_ACK:
        if (s->probing && p.probe == s->pnum && p.target == s->ptarget &&
            (p.sender == s->ptarget || s->ind_sent)) {
            s->acked = true;
            break;
        }
        for (int r = 0; r < RELAY_MAX; r++) {
            struct relay *rl = &s->relay[r];
            if (rl->used && rl->target == p.sender && rl->probe == p.probe) {
                rl->used = false;
                send_pkt(s, rl->origin, SWIM_ACK, rl->target, rl->origin_probe);
            }
        }
        break;
    case SWIM_NACK:
        if (s->probing && p.probe == s->pnum && p.target == s->ptarget && s->nacks < 8)
            s->nack_by[s->nacks++] = p.sender;
        break;
    default:
        break;
    }
    s->due = swim_next(s);
    return 0;
}

void swim_set_info(struct swim *s, const uint8_t info[SWIM_INFO])
{
    memcpy(s->info, info, SWIM_INFO);
}

void swim_announce(struct swim *s)
{
    for (uint32_t i = 0; i < s->c.n; i++)
        if (i != s->c.self) send_pkt(s, i, SWIM_PING, i, 0);
}

void swim_leave(struct swim *s)
{
    struct member *me = &s->m[s->c.self];
    me->state = SWIM_DEAD;
    me->by = s->c.self;
    enqueue(s, s->c.self);
    s->urgent = true;
    push(s, UINT32_MAX);
}

uint32_t swim_member_by(const struct swim *s, uint32_t m)
{
    return m < s->c.n ? s->m[m].by : 0;
}

enum swim_state swim_member_state(const struct swim *s, uint32_t m)
{
    return m < s->c.n ? (enum swim_state)s->m[m].state : SWIM_DEAD;
}

uint32_t swim_member_inc(const struct swim *s, uint32_t m)
{
    return m < s->c.n ? s->m[m].inc : 0;
}

uint64_t swim_member_boot(const struct swim *s, uint32_t m)
{
    return m < s->c.n ? s->m[m].boot : 0;
}

uint32_t swim_self_inc(const struct swim *s)
{
    return s->m[s->c.self].inc;
}

uint32_t swim_health(const struct swim *s)
{
    return s->lhm;
}

const struct swim_stats *swim_stats(const struct swim *s)
{
    return &s->st;
}

const char *swim_drop_name(enum swim_drop why)
{
    static const char *const names[SWIM_DROP__COUNT] = {"malformed", "mac", "member", "stale"};
    return why < SWIM_DROP__COUNT ? names[why] : "?";
}
