/*
 * The contract between the C shim and the Rust side of sched/fairmatch.
 * Plain C types only: no Slurm type crosses this line, so bindgen reads
 * this header alone (plus slurm_version.h for SLURM_VERSION_NUMBER).
 *
 * All strings are NUL-terminated and owned by the side that allocated
 * them; a snapshot lives only for the duration of fairmatch_rs_decide().
 */
#ifndef FAIRMATCH_SHIM_H
#define FAIRMATCH_SHIM_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
	const char *name;
	uint32_t cpus;
	const char *gres;      /* configured GRES, e.g. "gpu:2"; may be "" */
	int available;         /* up and not drained */
} fm_node_t;

typedef struct {
	const char *name;
	const uint32_t *nodes; /* indices into fm_snapshot_t.nodes */
	size_t n_nodes;
} fm_partition_t;

typedef struct {
	uint32_t job_id;
	const char *user;
	const char *account;
	const char *name;
	const char *comment;
	double time_limit;       /* seconds; < 0 when the job has none */
	const char *partitions;  /* comma-separated */
	uint32_t cpus;
	double submit;
	/* Running jobs only (NULL / 0 for pending ones). */
	const char *run_partition;
	const char *run_node;
	double start;
} fm_job_t;

typedef struct {
	const char *user;
	const char *name;
	const char *partition;
	double seconds;
} fm_finished_t;

typedef struct {
	double now;
	const fm_node_t *nodes;
	size_t n_nodes;
	const fm_partition_t *partitions;
	size_t n_partitions;
	const fm_job_t *pending;
	size_t n_pending;
	const fm_job_t *running;
	size_t n_running;
	const fm_finished_t *finished;
	size_t n_finished;
} fm_snapshot_t;

#define FM_WAIT 0
#define FM_START 1
#define FM_TEXT 256

typedef struct {
	uint32_t job_id;
	int32_t action;            /* FM_WAIT or FM_START */
	char partition[FM_TEXT];   /* FM_START: where */
	char node[FM_TEXT];
	uint32_t gpus;             /* FM_START: GPUs to request on the node */
	char reason[FM_TEXT];      /* FM_WAIT: shown to the user */
	char note[FM_TEXT];        /* "" or a note for the admin comment */
} fm_decision_t;

/* Implemented in Rust (src/plugin/), beside the plugin symbols init, fini
 * and sched_p_reconfig. Never unwind; errors are returned. */
uint32_t fairmatch_rs_interval_ms(void);
int32_t fairmatch_rs_manages(const char *partition);
/* Fills out[0..cap) and returns the count, or -1 if no decision could be
 * made (jobs then stay with Slurm's FIFO fallback). */
int64_t fairmatch_rs_decide(const fm_snapshot_t *snapshot, fm_decision_t *out,
			    size_t cap);

/* Implemented in C (sched_fairmatch.c), called by Rust. */
int32_t fairmatch_shim_start(void);
void fairmatch_shim_stop(void);
void fairmatch_shim_reconfig(void);
void fairmatch_shim_log(int32_t level, const char *message);
const char *fairmatch_shim_conf_path(void);

#endif
