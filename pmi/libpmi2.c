/*
 * libpmi2.c - libpmi2.so, the PMI-2 client API (include/pmi2.h) over psid's PMI-2 wire
 * (docs/pmi.md): the PMI-1 style handshake, then a frame per request and one per answer,
 * under the library's lock. localRanks and localRanksCount come from PMI_process_mapping.
 */
#include "pmi2.h"

#include "client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char jobid[PMI_KVSNAME_MAX + 1];

#define NEED_INIT()                                                                                \
    do {                                                                                           \
        if (!pmic_is_open()) return PMI2_ERR_INIT;                                                 \
    } while (0)

static void say_fail(const char *what, int r, const struct pmi_cmd *c)
{
    if (r == 1) fprintf(stderr, "libpmi2: rank %ld: %s: %s\n", pmic_rank(), what, pmic_why(c));
}

int PMI2_Init(int *spawned, int *size, int *rank, int *appnum)
{
    pmic_lock();
    int rc = PMI2_SUCCESS;
    struct pmi_cmd c;
    if (pmic_is_open()) goto answer;
    if (pmic_open(true) < 0) {
        rc = PMI2_FAIL;
        goto out;
    }
    if (pmic_single()) {
        snprintf(jobid, sizeof jobid, "singinit_kvs_%ld", (long)getpid());
        goto answer;
    }
    struct pmi_out *o = pmic_begin("fullinit");
    pmi_out_addi(o, "pmirank", pmic_rank());
    pmi_out_add(o, "threaded", "FALSE");
    int r = pmic_call("fullinit-response", &c);
    long rk = -1, sz = -1;
    if (r != 0 || pmi_get_int(&c, "rank", 0, 1L << 30, &rk) < 0 ||
        pmi_get_int(&c, "size", 1, 1L << 30, &sz) < 0 || rk != pmic_rank() || sz != pmic_size()) {
        say_fail("fullinit", r, &c);
        if (r == 0) fprintf(stderr, "libpmi2: fullinit: rank or size not this process's\n");
        pmic_close();
        rc = PMI2_FAIL;
        goto out;
    }
    pmic_begin("job-getid");
    r = pmic_call("job-getid-response", &c);
    if (r != 0 || pmi_copy(pmi_get(&c, "jobid"), jobid, sizeof jobid) < 0) {
        say_fail("job-getid", r, &c);
        pmic_close();
        rc = PMI2_FAIL;
        goto out;
    }
answer:
    if (spawned) *spawned = 0;
    if (size) *size = (int)pmic_size();
    if (rank) *rank = (int)pmic_rank();
    if (appnum) *appnum = 0;
out:
    pmic_unlock();
    return rc;
}

int PMI2_Finalize(void)
{
    NEED_INIT();
    pmic_lock();
    int rc = pmic_finalize("finalize-response") < 0 ? PMI2_FAIL : PMI2_SUCCESS;
    pmic_unlock();
    return rc;
}

int PMI2_Initialized(void)
{
    return pmic_is_open();
}

int PMI2_Set_threaded(int is_threaded)
{
    (void)is_threaded;
    return PMI2_SUCCESS;
}

int PMI2_Abort(int flag, const char msg[])
{
    if (msg && *msg) fprintf(stderr, "PMI2_Abort: %s\n", msg);
    if (pmic_is_open() && !pmic_single()) {
        pmic_lock();
        struct pmi_out *o = pmic_begin("abort");
        pmi_out_add(o, "isworldabort", flag ? "TRUE" : "FALSE");
        if (msg) pmi_out_addn(o, "msg", msg, strnlen(msg, PMI_VAL_MAX));
        pmic_send_only();
        pmic_unlock();
    }
    _exit(1);
}

int PMI2_Job_GetId(char id[], int id_size)
{
    NEED_INIT();
    if (!id) return PMI2_ERR_INVALID_ARG;
    return pmic_strcopy(id, id_size, jobid, strlen(jobid)) < 0 ? PMI2_ERR_INVALID_LENGTH
                                                               : PMI2_SUCCESS;
}

int PMI2_Job_GetRank(int *rank)
{
    NEED_INIT();
    if (!rank) return PMI2_ERR_INVALID_ARG;
    *rank = (int)pmic_rank();
    return PMI2_SUCCESS;
}

int PMI2_Info_GetSize(int *size)
{
    NEED_INIT();
    if (!size) return PMI2_ERR_INVALID_ARG;
    *size = (int)pmic_size();
    return PMI2_SUCCESS;
}

static bool key_ok(const char *key)
{
    return key && *key && strnlen(key, PMI2_MAX_KEYLEN + 1) <= PMI2_MAX_KEYLEN &&
           !strchr(key, ';') && !strchr(key, '=');
}

/* A key and value put with cmd (kvs-put, info-putnodeattr; answered cmd-response); kept
 * here in a singleton. */
static int put_pair(const char *cmd, const char *key, const char *value)
{
    NEED_INIT();
    if (!key_ok(key)) return PMI2_ERR_INVALID_KEY;
    if (!value || strnlen(value, PMI2_MAX_VALLEN + 1) > PMI2_MAX_VALLEN)
        return PMI2_ERR_INVALID_VAL;
    pmic_lock();
    int rc;
    if (pmic_single()) {
        rc = pmic_local_put(key, value) < 0 ? PMI2_ERR_NOMEM : PMI2_SUCCESS;
    } else {
        char answer[64];
        snprintf(answer, sizeof answer, "%s-response", cmd);
        struct pmi_cmd c;
        struct pmi_out *o = pmic_begin(cmd);
        pmi_out_add(o, "key", key);
        pmi_out_add(o, "value", value);
        int r = pmic_call(answer, &c);
        say_fail(cmd, r, &c);
        rc = r == 0 ? PMI2_SUCCESS : PMI2_FAIL;
    }
    pmic_unlock();
    return rc;
}

int PMI2_KVS_Put(const char key[], const char value[])
{
    return put_pair("kvs-put", key, value);
}

int PMI2_KVS_Fence(void)
{
    NEED_INIT();
    if (pmic_single()) return PMI2_SUCCESS;
    pmic_lock();
    struct pmi_cmd c;
    pmic_begin("kvs-fence");
    int r = pmic_call("kvs-fence-response", &c);
    say_fail("kvs-fence", r, &c);
    pmic_unlock();
    return r == 0 ? PMI2_SUCCESS : PMI2_FAIL;
}

/* Copy a found value: *vallen its length, or minus it if cut. */
static int give(const char *v, size_t n, char value[], int maxvalue, int *vallen)
{
    int cut = pmic_strcopy(value, maxvalue, v, n) < 0;
    if (vallen) *vallen = cut ? -(int)n : (int)n;
    return PMI2_SUCCESS;
}

/* A request of key=name that answers found=TRUE|FALSE and value: 0 found (value copied),
 * 1 not found, -1 failed. Under the lock. */
static int ask_found(const char *cmd, const char *want, const char *jid, const char *name,
                     bool wait, char value[], int valuelen, int *vallen)
{
    struct pmi_cmd c;
    struct pmi_out *o = pmic_begin(cmd);
    if (jid) pmi_out_add(o, "jobid", jid);
    pmi_out_add(o, "key", name);
    if (wait) pmi_out_add(o, "wait", "TRUE");
    int r = pmic_call(want, &c);
    if (r != 0) {
        say_fail(cmd, r, &c);
        return -1;
    }
    const struct pmi_kv *v = pmi_get(&c, "value");
    if (!pmi_is(pmi_get(&c, "found"), "TRUE") || !v) return 1;
    give(v->val, v->vlen, value, valuelen, vallen);
    return 0;
}

int PMI2_KVS_Get(const char *jid, int src_pmi_id, const char key[], char value[], int maxvalue,
                 int *vallen)
{
    NEED_INIT();
    (void)src_pmi_id;
    if (vallen) *vallen = 0;
    if (!key_ok(key)) return PMI2_ERR_INVALID_KEY;
    if (!value || maxvalue <= 0) return PMI2_ERR_INVALID_ARG;
    if (jid && strcmp(jid, jobid) != 0) return PMI2_ERR_INVALID_ARG;
    pmic_lock();
    int rc = PMI2_FAIL;
    if (pmic_single()) {
        const char *v = pmic_local_get(key);
        if (v) rc = give(v, strlen(v), value, maxvalue, vallen);
    } else if (ask_found("kvs-get", "kvs-get-response", jobid, key, false, value, maxvalue,
                         vallen) == 0) {
        rc = PMI2_SUCCESS;
    }
    pmic_unlock();
    return rc;
}

int PMI2_Info_GetJobAttr(const char name[], char value[], int valuelen, int *found)
{
    NEED_INIT();
    if (found) *found = 0;
    if (!key_ok(name)) return PMI2_ERR_INVALID_KEY;
    if (!value || valuelen <= 0) return PMI2_ERR_INVALID_ARG;
    if (pmic_single()) {
        if (strcmp(name, "universeSize") == 0) {
            pmic_strcopy(value, valuelen, "1", 1);
            if (found) *found = 1;
        }
        return PMI2_SUCCESS;
    }
    pmic_lock();
    int r = ask_found("info-getjobattr", "info-getjobattr-response", NULL, name, false, value,
                      valuelen, NULL);
    pmic_unlock();
    if (r < 0) return PMI2_FAIL;
    if (found) *found = r == 0;
    return PMI2_SUCCESS;
}

/* "1,2,3" into array: the count, or -1 if not a list of integers. */
static int int_list(const char *s, int array[], int arraylen)
{
    int n = 0;
    while (*s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < -2147483647L || v > 2147483647L) return -1;
        if (n < arraylen) array[n] = (int)v;
        n++;
        s = end;
        if (*s == ',')
            s++;
        else if (*s)
            return -1;
    }
    return n < arraylen ? n : arraylen;
}

int PMI2_Info_GetJobAttrIntArray(const char name[], int array[], int arraylen, int *outlen,
                                 int *found)
{
    char v[PMI2_MAX_ATTRVALUE + 1];
    int f = 0, rc = PMI2_Info_GetJobAttr(name, v, sizeof v, &f);
    if (outlen) *outlen = 0;
    if (found) *found = f;
    if (rc != PMI2_SUCCESS || !f) return rc;
    int n = int_list(v, array, arraylen);
    if (n < 0) return PMI2_ERR_INVALID_VAL;
    if (outlen) *outlen = n;
    return PMI2_SUCCESS;
}

int PMI2_Info_GetNodeAttr(const char name[], char value[], int valuelen, int *found, int waitfor)
{
    NEED_INIT();
    if (found) *found = 0;
    if (!key_ok(name)) return PMI2_ERR_INVALID_KEY;
    if (!value || valuelen <= 0) return PMI2_ERR_INVALID_ARG;
    pmic_lock();
    int r;
    if (pmic_single()) {
        const char *v = pmic_local_get(name);
        r = v ? (give(v, strlen(v), value, valuelen, NULL), 0) : 1;
    } else {
        r = ask_found("info-getnodeattr", "info-getnodeattr-response", NULL, name, waitfor != 0,
                      value, valuelen, NULL);
    }
    pmic_unlock();
    if (r < 0) return PMI2_FAIL;
    if (found) *found = r == 0;
    return PMI2_SUCCESS;
}

/* The clique, fetched once (under the lock): its ranks and *n, or NULL. */
static const int *clique_locked(long *n)
{
    const int *known = pmic_clique_known(n);
    if (known) return known;
    static char map[PMI2_MAX_ATTRVALUE + 1];
    int r = pmic_single() ? 1
                          : ask_found("info-getjobattr", "info-getjobattr-response", NULL,
                                      "PMI_process_mapping", false, map, sizeof map, NULL);
    return pmic_clique(r == 0 ? map : NULL, n);
}

int PMI2_Info_GetNodeAttrIntArray(const char name[], int array[], int arraylen, int *outlen,
                                  int *found)
{
    NEED_INIT();
    if (outlen) *outlen = 0;
    if (found) *found = 0;
    if (!key_ok(name) || !array || arraylen < 0) return PMI2_ERR_INVALID_ARG;
    bool count = strcmp(name, "localRanksCount") == 0, ranks = strcmp(name, "localRanks") == 0;
    if (count || ranks) {
        pmic_lock();
        long nclique;
        const int *clique = clique_locked(&nclique);
        int rc = clique ? PMI2_SUCCESS : PMI2_FAIL;
        if (rc == PMI2_SUCCESS) {
            int n = count ? 1 : (int)(nclique < arraylen ? nclique : arraylen);
            if (count && arraylen > 0) array[0] = (int)nclique;
            if (ranks) memcpy(array, clique, (size_t)n * sizeof *array);
            if (outlen) *outlen = arraylen > 0 ? n : 0;
            if (found) *found = 1;
        }
        pmic_unlock();
        return rc;
    }
    char v[PMI2_MAX_VALLEN + 1];
    int f = 0, rc = PMI2_Info_GetNodeAttr(name, v, sizeof v, &f, 0);
    if (found) *found = f;
    if (rc != PMI2_SUCCESS || !f) return rc;
    int n = int_list(v, array, arraylen);
    if (n < 0) return PMI2_ERR_INVALID_VAL;
    if (outlen) *outlen = n;
    return PMI2_SUCCESS;
}

int PMI2_Info_PutNodeAttr(const char name[], const char value[])
{
    return put_pair("info-putnodeattr", name, value);
}

/* ---- not supported by the server ---- */

int PMI2_Job_Spawn(int count, const char *cmds[], int argcs[], const char **argvs[],
                   const int maxprocs[], const int info_keyval_sizes[],
                   const PMI2_keyval_t *info_keyval_vectors[], int preput_keyval_size,
                   const PMI2_keyval_t preput_keyval_vector[], char jobId[], int jobIdSize,
                   int errors[])
{
    (void)cmds, (void)argcs, (void)argvs, (void)maxprocs, (void)info_keyval_sizes;
    (void)info_keyval_vectors, (void)preput_keyval_size, (void)preput_keyval_vector;
    fprintf(stderr, "libpmi2: PMI2_Job_Spawn (MPI_Comm_spawn) is not supported under psrun\n");
    if (jobId && jobIdSize > 0) jobId[0] = 0;
    for (int i = 0; errors && i < count; i++) errors[i] = PMI2_ERR_OTHER;
    return PMI2_ERR_OTHER;
}

int PMI2_Job_Connect(const char id[], PMI2_Connect_comm_t *conn)
{
    (void)id, (void)conn;
    return PMI2_ERR_OTHER;
}

int PMI2_Job_Disconnect(const char id[])
{
    (void)id;
    return PMI2_ERR_OTHER;
}

int PMI2_Nameserv_publish(const char service_name[], const PMI2_keyval_t *info_ptr,
                          const char port[])
{
    (void)service_name, (void)info_ptr, (void)port;
    return PMI2_ERR_OTHER;
}

int PMI2_Nameserv_lookup(const char service_name[], const PMI2_keyval_t *info_ptr, char port[],
                         int portLen)
{
    (void)service_name, (void)info_ptr, (void)port, (void)portLen;
    return PMI2_ERR_OTHER;
}

int PMI2_Nameserv_unpublish(const char service_name[], const PMI2_keyval_t *info_ptr)
{
    (void)service_name, (void)info_ptr;
    return PMI2_ERR_OTHER;
}
