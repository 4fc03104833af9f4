/*
 * pmi.h - the PMI-1 client API of libpmi.so (pscluster): a parallel program's process asks
 * its process manager (psid, through the socket psrun's job inherits in PMI_FD) for its
 * rank, the job's size, and a key-value store with a fence. The calls and constants are the
 * ones MPICH's and Slurm's pmi.h declare, so a program or an MPI built against a PMI library
 * (MPICH --with-pmi=slurm, Open MPI's flux component through FLUX_PMI_LIBRARY_PATH) runs
 * with this one. Without PMI_FD the process is a singleton: rank 0 of 1, its own store.
 * docs/pmi.md, "The client libraries".
 *
 * Build: cc prog.c $(pkg-config --cflags --libs pscluster-pmi)
 */
#ifndef PSCLUSTER_PMI_H
#define PSCLUSTER_PMI_H

#ifdef __cplusplus
extern "C" {
#endif

#define PMI_SUCCESS                0
#define PMI_FAIL                   -1
#define PMI_ERR_INIT               1
#define PMI_ERR_NOMEM              2
#define PMI_ERR_INVALID_ARG        3
#define PMI_ERR_INVALID_KEY        4
#define PMI_ERR_INVALID_KEY_LENGTH 5
#define PMI_ERR_INVALID_VAL        6
#define PMI_ERR_INVALID_VAL_LENGTH 7
#define PMI_ERR_INVALID_LENGTH     8
#define PMI_ERR_INVALID_NUM_ARGS   9
#define PMI_ERR_INVALID_ARGS       10
#define PMI_ERR_INVALID_NUM_PARSED 11
#define PMI_ERR_INVALID_KEYVALP    12
#define PMI_ERR_INVALID_SIZE       13
#define PMI_ERR_INVALID_KVS        14

typedef int PMI_BOOL;
#define PMI_TRUE  1
#define PMI_FALSE 0

typedef struct PMI_keyval_t {
    char *key;
    char *val;
} PMI_keyval_t;

/* Start: the channel's handshake (cmd=init). *spawned: 0 (psrun spawns no job from a job). */
int PMI_Init(int *spawned);
int PMI_Initialized(PMI_BOOL *initialized);
int PMI_Finalize(void);
int PMI_Get_size(int *size);
int PMI_Get_rank(int *rank);
int PMI_Get_universe_size(int *size);
int PMI_Get_appnum(int *appnum);
/* The ranks on this process's node, from PMI_process_mapping (this process alone if the job
 * has no mapping). */
int PMI_Get_clique_size(int *size);
int PMI_Get_clique_ranks(int ranks[], int length);
/* All ranks in: the fence (puts before it are visible to gets after it, everywhere). */
int PMI_Barrier(void);
/* Ends the job: psrun exits exit_code. Does not return. */
int PMI_Abort(int exit_code, const char error_msg[]);

int PMI_KVS_Get_my_name(char kvsname[], int length);
int PMI_KVS_Get_name_length_max(int *length);
int PMI_KVS_Get_key_length_max(int *length);
int PMI_KVS_Get_value_length_max(int *length);
/* A value holds no control character (spaces are fine) and is at most
 * PMI_KVS_Get_value_length_max bytes (what a wire line of 1024 bytes leaves), else
 * PMI_ERR_INVALID_VAL; a key no space and no '=', else PMI_ERR_INVALID_KEY. */
int PMI_KVS_Put(const char kvsname[], const char key[], const char value[]);
/* Puts are sent as they are made: nothing to commit. */
int PMI_KVS_Commit(const char kvsname[]);
/* A key nobody put: PMI_FAIL. */
int PMI_KVS_Get(const char kvsname[], const char key[], char value[], int length);

/* The job's id (its KVS name): deprecated MPICH calls, kept for old programs. */
int PMI_Get_id(char id_str[], int length);
int PMI_Get_kvs_domain_id(char id_str[], int length);
int PMI_Get_id_length_max(int *length);

/* Not supported by psid's PMI server (docs/pmi.md): PMI_FAIL. */
int PMI_Publish_name(const char service_name[], const char port[]);
int PMI_Unpublish_name(const char service_name[]);
int PMI_Lookup_name(const char service_name[], char port[]);
int PMI_KVS_Create(char kvsname[], int length);
int PMI_KVS_Destroy(const char kvsname[]);
int PMI_KVS_Iter_first(const char kvsname[], char key[], int key_len, char val[], int val_len);
int PMI_KVS_Iter_next(const char kvsname[], char key[], int key_len, char val[], int val_len);
int PMI_Spawn_multiple(int count, const char *cmds[], const char **argvs[], const int maxprocs[],
                       const int info_keyval_sizesp[], const PMI_keyval_t *info_keyval_vectors[],
                       int preput_keyval_size, const PMI_keyval_t preput_keyval_vector[],
                       int errors[]);
int PMI_Parse_option(int num_args, char *args[], int *num_parsed, PMI_keyval_t **keyvalp,
                     int *size);
int PMI_Args_to_keyval(int *argcp, char *((*argvp)[]), PMI_keyval_t **keyvalp, int *size);
int PMI_Free_keyvals(PMI_keyval_t keyvalp[], int size);
int PMI_Get_options(char *str, int *length);

#ifdef __cplusplus
}
#endif

#endif
