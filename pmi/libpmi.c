/*
 * libpmi.c - libpmi.so, the PMI-1 client API (include/pmi.h) over psid's PMI-1 wire
 * (docs/pmi.md): each call one request line and its answer, under the library's lock. The
 * clique comes from the job's PMI_process_mapping, fetched once; puts go out as they are made
 * (PMI_KVS_Commit has nothing to do), PMI_Barrier is the fence.
 */
#include "pmi.h"

#include "client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char kvsname[PMI_KVSNAME_MAX + 1];

#define NEED_INIT()                                                                                \
    do {                                                                                           \
        if (!pmic_is_open()) return PMI_ERR_INIT;                                                  \
    } while (0)

/* a key the PMI-1 wire can carry: no space, no control character, no '=' */
static bool key_ok(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if ((unsigned char)s[n] <= 0x20 || s[n] == '=' || n >= PMI_KEY_MAX) return false;
    return n > 0;
}

static int value_max(void);

/* a value: no control character (spaces are fine: value= is the line's last pair and takes
 * its rest), at most what a line leaves */
static bool value_ok(const char *s)
{
    size_t n = 0, max = (size_t)value_max();
    for (; s[n]; n++)
        if ((unsigned char)s[n] < 0x20 || n >= max) return false;
    return true;
}

int PMI_Init(int *spawned)
{
    if (spawned) *spawned = PMI_FALSE;
    pmic_lock();
    int rc = PMI_SUCCESS;
    struct pmi_cmd c;
    if (pmic_is_open()) goto out;
    if (pmic_open(false) < 0) {
        rc = PMI_FAIL;
        goto out;
    }
    if (pmic_single()) {
        snprintf(kvsname, sizeof kvsname, "singinit_kvs_%ld", (long)getpid());
        goto out;
    }
    pmic_begin("get_my_kvsname");
    if (pmic_call("my_kvsname", &c) != 0 ||
        pmi_copy(pmi_get(&c, "kvsname"), kvsname, sizeof kvsname) < 0) {
        fprintf(stderr, "libpmi: rank %ld: no KVS name from the PMI server\n", pmic_rank());
        pmic_close();
        rc = PMI_FAIL;
    }
out:
    pmic_unlock();
    return rc;
}

int PMI_Initialized(PMI_BOOL *initialized)
{
    if (!initialized) return PMI_ERR_INVALID_ARG;
    *initialized = pmic_is_open() ? PMI_TRUE : PMI_FALSE;
    return PMI_SUCCESS;
}

int PMI_Finalize(void)
{
    NEED_INIT();
    pmic_lock();
    int rc = pmic_finalize("finalize_ack") < 0 ? PMI_FAIL : PMI_SUCCESS;
    pmic_unlock();
    return rc;
}

int PMI_Get_size(int *size)
{
    NEED_INIT();
    if (!size) return PMI_ERR_INVALID_ARG;
    *size = (int)pmic_size();
    return PMI_SUCCESS;
}

int PMI_Get_rank(int *rank)
{
    NEED_INIT();
    if (!rank) return PMI_ERR_INVALID_ARG;
    *rank = (int)pmic_rank();
    return PMI_SUCCESS;
}

/* A number the server answers cmd with (answer's field, lo..), or single's in a singleton. */
static int ask_int(const char *cmd, const char *answer, const char *field, long lo, int single,
                   int *out)
{
    NEED_INIT();
    if (!out) return PMI_ERR_INVALID_ARG;
    if (pmic_single()) {
        *out = single;
        return PMI_SUCCESS;
    }
    pmic_lock();
    struct pmi_cmd c;
    long v = 0;
    int rc = PMI_SUCCESS;
    pmic_begin(cmd);
    if (pmic_call(answer, &c) != 0 || pmi_get_int(&c, field, lo, 1L << 30, &v) < 0)
        rc = PMI_FAIL;
    else
        *out = (int)v;
    pmic_unlock();
    return rc;
}

int PMI_Get_universe_size(int *size)
{
    return ask_int("get_universe_size", "universe_size", "size", 1, 1, size);
}

int PMI_Get_appnum(int *appnum)
{
    return ask_int("get_appnum", "appnum", "appnum", 0, 0, appnum);
}

/* A get under the lock: PMI_SUCCESS with the value copied, PMI_FAIL (no such key, or the
 * server's error), PMI_ERR_INVALID_LENGTH (it did not fit). */
static int get_locked(const char *key, char *value, int length)
{
    if (pmic_single()) {
        const char *v = pmic_local_get(key);
        if (!v) return PMI_FAIL;
        return pmic_strcopy(value, length, v, strlen(v)) < 0 ? PMI_ERR_INVALID_LENGTH : PMI_SUCCESS;
    }
    struct pmi_cmd c;
    struct pmi_out *o = pmic_begin("get");
    pmi_out_add(o, "kvsname", kvsname);
    pmi_out_add(o, "key", key);
    if (pmic_call("get_result", &c) != 0) return PMI_FAIL;
    const struct pmi_kv *v = pmi_get(&c, "value");
    if (!v) return PMI_FAIL;
    return pmic_strcopy(value, length, v->val, v->vlen) < 0 ? PMI_ERR_INVALID_LENGTH : PMI_SUCCESS;
}

/* The clique, fetched once (under the lock): its ranks and *n, or NULL. */
static const int *clique_locked(long *n)
{
    const int *r = pmic_clique_known(n);
    if (r) return r;
    static char map[PMI_VAL_MAX + 1];
    int got = pmic_single() ? PMI_FAIL : get_locked("PMI_process_mapping", map, sizeof map);
    return pmic_clique(got == PMI_SUCCESS ? map : NULL, n);
}

int PMI_Get_clique_size(int *size)
{
    NEED_INIT();
    if (!size) return PMI_ERR_INVALID_ARG;
    pmic_lock();
    long nclique;
    int rc = clique_locked(&nclique) ? PMI_SUCCESS : PMI_FAIL;
    if (rc == PMI_SUCCESS) *size = (int)nclique;
    pmic_unlock();
    return rc;
}

int PMI_Get_clique_ranks(int ranks[], int length)
{
    NEED_INIT();
    if (!ranks) return PMI_ERR_INVALID_ARG;
    pmic_lock();
    long nclique;
    const int *clique = clique_locked(&nclique);
    int rc = clique ? PMI_SUCCESS : PMI_FAIL;
    if (rc == PMI_SUCCESS && length < nclique) rc = PMI_ERR_INVALID_LENGTH;
    if (rc == PMI_SUCCESS) memcpy(ranks, clique, (size_t)nclique * sizeof *ranks);
    pmic_unlock();
    return rc;
}

int PMI_Barrier(void)
{
    NEED_INIT();
    if (pmic_single()) return PMI_SUCCESS;
    pmic_lock();
    struct pmi_cmd c;
    pmic_begin("barrier_in");
    int r = pmic_call("barrier_out", &c);
    if (r == 1)
        fprintf(stderr, "libpmi: rank %ld: the fence failed: %s\n", pmic_rank(), pmic_why(&c));
    pmic_unlock();
    return r == 0 ? PMI_SUCCESS : PMI_FAIL;
}

int PMI_Abort(int exit_code, const char error_msg[])
{
    if (error_msg && *error_msg) fprintf(stderr, "PMI_Abort(%d): %s\n", exit_code, error_msg);
    if (pmic_is_open() && !pmic_single()) {
        pmic_lock();
        struct pmi_out *o = pmic_begin("abort");
        pmi_out_addi(o, "exitcode", exit_code);
        pmic_send_only();
        pmic_unlock();
    }
    _exit(exit_code);
}

int PMI_KVS_Get_my_name(char name[], int length)
{
    NEED_INIT();
    if (!name) return PMI_ERR_INVALID_ARG;
    return pmic_strcopy(name, length, kvsname, strlen(kvsname)) < 0 ? PMI_ERR_INVALID_LENGTH
                                                                    : PMI_SUCCESS;
}

int PMI_KVS_Get_name_length_max(int *length)
{
    if (!length) return PMI_ERR_INVALID_ARG;
    *length = PMI_KVSNAME_MAX;
    return PMI_SUCCESS;
}

int PMI_KVS_Get_key_length_max(int *length)
{
    if (!length) return PMI_ERR_INVALID_ARG;
    *length = PMI_KEY_MAX;
    return PMI_SUCCESS;
}

/* The longest value a put line can carry: the wire's lines are at most PMI1_LINE_MAX bytes
 * whole, so what a put of the longest key leaves (915 bytes for a KVS name of 16). Open
 * MPI's flux component packs its values up to this length. */
static int value_max(void)
{
    static const char frame[] = "cmd=put kvsname= key= value=\n";
    size_t over = sizeof frame - 1 + strlen(kvsname) + PMI_KEY_MAX;
    size_t room = over < PMI1_LINE_MAX ? PMI1_LINE_MAX - over : 0;
    return (int)(room < PMI_VAL_MAX ? room : PMI_VAL_MAX);
}

int PMI_KVS_Get_value_length_max(int *length)
{
    if (!length) return PMI_ERR_INVALID_ARG;
    *length = value_max();
    return PMI_SUCCESS;
}

static int check_kvs(const char *name)
{
    if (!name) return PMI_ERR_INVALID_ARG;
    return strcmp(name, kvsname) == 0 ? PMI_SUCCESS : PMI_ERR_INVALID_KVS;
}

int PMI_KVS_Put(const char name[], const char key[], const char value[])
{
    NEED_INIT();
    int rc = check_kvs(name);
    if (rc != PMI_SUCCESS) return rc;
    if (!key || !key_ok(key)) return PMI_ERR_INVALID_KEY;
    if (!value || !value_ok(value)) return PMI_ERR_INVALID_VAL;
    pmic_lock();
    if (pmic_single()) {
        rc = pmic_local_put(key, value) < 0 ? PMI_ERR_NOMEM : PMI_SUCCESS;
    } else {
        struct pmi_cmd c;
        struct pmi_out *o = pmic_begin("put");
        pmi_out_add(o, "kvsname", kvsname);
        pmi_out_add(o, "key", key);
        pmi_out_add(o, "value", value);
        int r = pmic_call("put_result", &c);
        if (r == 1)
            fprintf(stderr, "libpmi: rank %ld: put %s: %s\n", pmic_rank(), key, pmic_why(&c));
        rc = r == 0 ? PMI_SUCCESS : PMI_FAIL;
    }
    pmic_unlock();
    return rc;
}

int PMI_KVS_Commit(const char name[])
{
    NEED_INIT();
    return check_kvs(name);
}

int PMI_KVS_Get(const char name[], const char key[], char value[], int length)
{
    NEED_INIT();
    int rc = check_kvs(name);
    if (rc != PMI_SUCCESS) return rc;
    if (!key || !key_ok(key)) return PMI_ERR_INVALID_KEY;
    if (!value || length <= 0) return PMI_ERR_INVALID_ARG;
    pmic_lock();
    rc = get_locked(key, value, length);
    pmic_unlock();
    return rc;
}

int PMI_Get_id(char id_str[], int length)
{
    return PMI_KVS_Get_my_name(id_str, length);
}

int PMI_Get_kvs_domain_id(char id_str[], int length)
{
    return PMI_KVS_Get_my_name(id_str, length);
}

int PMI_Get_id_length_max(int *length)
{
    return PMI_KVS_Get_name_length_max(length);
}

/* ---- not supported by the server: the same answer without asking it ---- */

int PMI_Publish_name(const char service_name[], const char port[])
{
    (void)service_name, (void)port;
    return PMI_FAIL;
}

int PMI_Unpublish_name(const char service_name[])
{
    (void)service_name;
    return PMI_FAIL;
}

int PMI_Lookup_name(const char service_name[], char port[])
{
    (void)service_name, (void)port;
    return PMI_FAIL;
}

int PMI_KVS_Create(char name[], int length)
{
    (void)name, (void)length;
    return PMI_FAIL;
}

int PMI_KVS_Destroy(const char name[])
{
    (void)name;
    return PMI_FAIL;
}

int PMI_KVS_Iter_first(const char name[], char key[], int key_len, char val[], int val_len)
{
    (void)name, (void)key, (void)key_len, (void)val, (void)val_len;
    return PMI_FAIL;
}

int PMI_KVS_Iter_next(const char name[], char key[], int key_len, char val[], int val_len)
{
    (void)name, (void)key, (void)key_len, (void)val, (void)val_len;
    return PMI_FAIL;
}

int PMI_Spawn_multiple(int count, const char *cmds[], const char **argvs[], const int maxprocs[],
                       const int info_keyval_sizesp[], const PMI_keyval_t *info_keyval_vectors[],
                       int preput_keyval_size, const PMI_keyval_t preput_keyval_vector[],
                       int errors[])
{
    (void)cmds, (void)argvs, (void)maxprocs, (void)info_keyval_sizesp;
    (void)info_keyval_vectors, (void)preput_keyval_size, (void)preput_keyval_vector;
    fprintf(stderr, "libpmi: PMI_Spawn_multiple (MPI_Comm_spawn) is not supported under psrun\n");
    for (int i = 0; errors && i < count; i++) errors[i] = PMI_FAIL;
    return PMI_FAIL;
}

int PMI_Parse_option(int num_args, char *args[], int *num_parsed, PMI_keyval_t **keyvalp, int *size)
{
    (void)num_args, (void)args, (void)keyvalp;
    if (num_parsed) *num_parsed = 0;
    if (size) *size = 0;
    return PMI_FAIL;
}

int PMI_Args_to_keyval(int *argcp, char *((*argvp)[]), PMI_keyval_t **keyvalp, int *size)
{
    (void)argcp, (void)argvp;
    if (keyvalp) *keyvalp = NULL;
    if (size) *size = 0;
    return PMI_FAIL;
}

int PMI_Free_keyvals(PMI_keyval_t keyvalp[], int size)
{
    (void)keyvalp, (void)size;
    return PMI_SUCCESS;
}

int PMI_Get_options(char *str, int *length)
{
    if (str && length && *length > 0) str[0] = 0;
    return PMI_SUCCESS;
}
