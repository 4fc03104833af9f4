/*
 * pmi2.h - the PMI-2 client API of libpmi2.so (pscluster): the same service as pmi.h over
 * PMI-2's framed wire (psrun --mpi=pmi2), with the calls and constants of MPICH's and
 * Slurm's pmi2.h. Without PMI_FD the process is a singleton: rank 0 of 1, its own store.
 * docs/pmi.md, "The client libraries".
 *
 * Build: cc prog.c $(pkg-config --cflags --libs pscluster-pmi2)
 */
#ifndef PSCLUSTER_PMI2_H
#define PSCLUSTER_PMI2_H

#ifdef __cplusplus
extern "C" {
#endif

#define PMI2_MAX_KEYLEN    64
#define PMI2_MAX_VALLEN    1024
#define PMI2_MAX_ATTRVALUE 1024
#define PMI2_ID_NULL       -1

#define PMI2_SUCCESS                0
#define PMI2_FAIL                   -1
#define PMI2_ERR_INIT               1
#define PMI2_ERR_NOMEM              2
#define PMI2_ERR_INVALID_ARG        3
#define PMI2_ERR_INVALID_KEY        4
#define PMI2_ERR_INVALID_KEY_LENGTH 5
#define PMI2_ERR_INVALID_VAL        6
#define PMI2_ERR_INVALID_VAL_LENGTH 7
#define PMI2_ERR_INVALID_LENGTH     8
#define PMI2_ERR_INVALID_NUM_ARGS   9
#define PMI2_ERR_INVALID_ARGS       10
#define PMI2_ERR_INVALID_NUM_PARSED 11
#define PMI2_ERR_INVALID_KEYVALP    12
#define PMI2_ERR_INVALID_SIZE       13
#define PMI2_ERR_OTHER              14

typedef struct PMI2_keyval_t {
    const char *key;
    const char *val;
} PMI2_keyval_t;

typedef struct PMI2_Connect_comm {
    int (*read)(void *buf, int maxlen, void *ctx);
    int (*write)(const void *buf, int len, void *ctx);
    void *ctx;
    int isMaster;
} PMI2_Connect_comm_t;

/* The handshake and fullinit: the job's size, this process's rank, appnum 0, spawned 0. */
int PMI2_Init(int *spawned, int *size, int *rank, int *appnum);
int PMI2_Finalize(void);
int PMI2_Initialized(void);
/* Calls are serialised by a lock whatever is set here. */
int PMI2_Set_threaded(int is_threaded);
/* Ends the job (psrun exits 1 and prints msg). Does not return. */
int PMI2_Abort(int flag, const char msg[]);

int PMI2_Job_GetId(char jobid[], int jobid_size);
int PMI2_Job_GetRank(int *rank);
int PMI2_Info_GetSize(int *size);

int PMI2_KVS_Put(const char key[], const char value[]);
int PMI2_KVS_Fence(void);
/* jobid NULL or this job's; *vallen: the value's length, or minus it if it did not fit in
 * maxvalue (the value is cut). A key nobody put: PMI2_FAIL. */
int PMI2_KVS_Get(const char *jobid, int src_pmi_id, const char key[], char value[], int maxvalue,
                 int *vallen);

/* Job attributes: PMI_process_mapping, universeSize. */
int PMI2_Info_GetJobAttr(const char name[], char value[], int valuelen, int *found);
int PMI2_Info_GetJobAttrIntArray(const char name[], int array[], int arraylen, int *outlen,
                                 int *found);
/* Node attributes, shared by the job's processes on one node; localRanksCount and localRanks
 * come from PMI_process_mapping. */
int PMI2_Info_GetNodeAttr(const char name[], char value[], int valuelen, int *found, int waitfor);
int PMI2_Info_GetNodeAttrIntArray(const char name[], int array[], int arraylen, int *outlen,
                                  int *found);
int PMI2_Info_PutNodeAttr(const char name[], const char value[]);

/* Not supported by psid's PMI server (docs/pmi.md): PMI2_FAIL or PMI2_ERR_OTHER. */
int PMI2_Job_Spawn(int count, const char *cmds[], int argcs[], const char **argvs[],
                   const int maxprocs[], const int info_keyval_sizes[],
                   const PMI2_keyval_t *info_keyval_vectors[], int preput_keyval_size,
                   const PMI2_keyval_t preput_keyval_vector[], char jobId[], int jobIdSize,
                   int errors[]);
int PMI2_Job_Connect(const char jobid[], PMI2_Connect_comm_t *conn);
int PMI2_Job_Disconnect(const char jobid[]);
int PMI2_Nameserv_publish(const char service_name[], const PMI2_keyval_t *info_ptr,
                          const char port[]);
int PMI2_Nameserv_lookup(const char service_name[], const PMI2_keyval_t *info_ptr, char port[],
                         int portLen);
int PMI2_Nameserv_unpublish(const char service_name[], const PMI2_keyval_t *info_ptr);

#ifdef __cplusplus
}
#endif

#endif
