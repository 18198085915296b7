/*
 * The contract between the C shim and the Rust side of sched/fairmatch.
 * Plain C types only: no Slurm type crosses this line, so bindgen reads
 * this header alone (plus slurm_version.h for SLURM_VERSION_NUMBER).
 *
 * The boundary is one-way. The C side owns the plugin's life and its agent
 * thread; once per cycle it calls fairmatch_rs_plan() with a snapshot and,
 * after applying the decisions under slurmctld's locks, once
 * fairmatch_rs_observe() with what happened to each. Rust never calls into
 * Slurm (only fairmatch_shim_log), and nothing is called per job.
 *
 * All strings are NUL-terminated and owned by the side that allocated
 * them; a snapshot lives only for the duration of fairmatch_rs_plan().
 */
#ifndef FAIRMATCH_SHIM_H
#define FAIRMATCH_SHIM_H

#include <stddef.h>
#include <stdint.h>

/* GPUs of one node whose shards the plan tracks; a node with more offers
 * shards on its first FM_MAX_DEVICES. */
#define FM_MAX_DEVICES 16

typedef struct {
	const char *name;
	uint32_t cpus;
	uint32_t sockets;      /* configured sockets (boards x sockets) */
	const char *gres;      /* configured GRES, e.g. "gpu:2"; may be "" */
	int available;         /* up, responding, not drained */
	/* Held by running jobs fairmatch does not model (multi-node jobs,
	 * jobs of unmanaged partitions): those slots are not the plan's. */
	uint32_t foreign_cpus;
	uint32_t foreign_gpus;
	/* Reserved from reserved_from on for the highest-priority unmodelled
	 * job that cannot start yet (0: not reserved). */
	double reserved_from;
	/* On a node with shards (Gres=gpu:N,shard:M), per GPU: its shards,
	 * those allocated, and whether the GPU is allocated whole (bit i of
	 * device_whole). n_devices = 0 on a node without shards. */
	uint32_t n_devices;
	uint32_t device_shards[FM_MAX_DEVICES];
	uint32_t device_shards_used[FM_MAX_DEVICES];
	uint64_t device_whole;
} fm_node_t;

typedef struct {
	const char *name;
	const uint32_t *nodes; /* indices into fm_snapshot_t.nodes */
	size_t n_nodes;
	int schedulable;       /* partition state lets jobs start */
	/* MaxCPUsPerNode and MaxCPUsPerSocket: CPUs the partition's jobs may
	 * hold on one node or socket; 0 = no limit. */
	uint32_t max_cpus_per_node;
	uint32_t max_cpus_per_socket;
	/* OverSubscribe: jobs that may share one CPU (1 = none share), and
	 * whether they share without asking (FORCE). */
	uint32_t jobs_per_cpu;
	int force_share;
	uint32_t priority_tier;  /* PriorityTier */
	/* Whether its jobs may preempt others to start: FM_PREEMPT_NONE,
	 * FM_PREEMPT_TIER (preempt/partition_prio: lower tiers) or
	 * FM_PREEMPT_OTHER (as the QOS says). */
	int preemption;
} fm_partition_t;

#define FM_PREEMPT_NONE 0
#define FM_PREEMPT_TIER 1
#define FM_PREEMPT_OTHER 2

typedef struct {
	uint32_t job_id;
	/* Pending array tasks this record stands for (1 for a plain job). */
	uint32_t tasks;
	const char *user;
	const char *account;
	const char *name;
	const char *comment;
	/* The hint the job's sbatch options gave (fairmatch's SPANK
	 * plugin: FAIRMATCH_HINT in its SPANK environment), or NULL. */
	const char *hint_option;
	double time_limit;       /* seconds; < 0 when the job has none */
	/* Pending: the partitions Slurm's own limits let it start in now,
	 * comma-separated, in the user's order. Running: as submitted. */
	const char *partitions;
	uint32_t cpus;           /* in all, on every node */
	/* Pending: GPUs asked for on each node (--gres=gpu[:type]:N,
	 * --gpus-per-node, or --gpus=N over -N k: ceil(N / k)); 0 = none.
	 * Running: the most GPUs it holds on one of its nodes. */
	uint32_t gpus;
	/* Pending: --gpus=N where the job leaves its node count to Slurm
	 * (the plan takes the fewest nodes that hold N); 0 otherwise. */
	uint32_t gpus_per_job;
	/* Pending: -N (at least 1) and its upper bound (0: none). Running:
	 * the nodes it holds, both. */
	uint32_t min_nodes;
	uint32_t max_nodes;
	const char *gpu_type;    /* the GPU type asked for, or "" */
	/* Shards of one GPU asked for on each node (--gres=shard:N); 0 =
	 * none. A job asks for shards or GPUs, never both. */
	uint32_t shards;
	int shares_cpus;         /* asked to share CPUs (--oversubscribe) */
	/* Fair-share shares of the job's user and account associations
	 * (sacctmgr's Fairshare=); 0 when unknown or inherited. */
	double user_shares;
	double account_shares;
	/* The decayed usage of those associations (sshare's RawUsage), as
	 * priority/multifactor keeps it; < 0 when unknown (no accounting, or
	 * another priority plugin). */
	double user_usage;
	double account_usage;
	/* The fair-share factor of the job's association (sshare's
	 * FairShare column: fair tree's rank, by default), as
	 * priority/multifactor last computed it; higher is less served.
	 * < 0 when unknown. */
	double fair_share_factor;
	double eligible;
	/* Pending: nodes the job may use (--exclude, --nodelist,
	 * --constraint, reservations). Running: the nodes it holds. Indices
	 * into fm_snapshot_t.nodes. */
	const uint32_t *nodes;
	size_t n_nodes;
	/* Pending only: FM_CHECK_NOT while Slurm's checks have not looked at
	 * it this cycle (partitions as submitted, nodes not known yet), then
	 * FM_CHECK_RUNNABLE or FM_CHECK_BLOCKED. */
	int32_t checked;
	/* Running jobs only (NULL for pending ones). */
	const char *run_partition;
	/* Running: when it started. Pending: the start Slurm shows for it
	 * (StartTime), 0 if none. */
	double start;
	/* Slurm may requeue it: a batch job that allows it. */
	int requeue;
	const char *qos;         /* its QOS's name, or "" */
	/* Seconds of notice its --signal asks for; < 0 without --signal. */
	double notice;
	/* Pending only: its priority (never 0: held jobs are not copied),
	 * whether an operator set it (scontrol update Priority=), and its
	 * QOS's Priority (0 without a QOS). */
	uint32_t priority;
	int set_by_admin;
	uint32_t qos_priority;
} fm_job_t;

typedef struct {
	const char *user;
	const char *name;
	const char *partition;
	const char *nodes;       /* the nodes it ran on, as squeue lists them */
	int shards;              /* it ran on shards of a GPU */
	double seconds;
	double end;              /* when it ended (whole seconds) */
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

#define FM_CHECK_NOT 0
#define FM_CHECK_RUNNABLE 1
#define FM_CHECK_BLOCKED 2

#define FM_WAIT 0
#define FM_START 1
/* A running job gives way: requeued now, or (`notice`) sent its --signal
 * now, the requeue following in a later decision. */
#define FM_PREEMPT 2
/* The plan cannot hold the job's shape (a gang wider than each GPU type
 * of its partitions), though Slurm may run it: the first-come pass takes
 * it from the next cycle on. */
#define FM_FIRST_COME 3
#define FM_TEXT 256
/* At most this many tasks of one array are planned per cycle. */
#define FM_MAX_TASKS 256
/* A job asking for more nodes than this is left to the first-come pass. */
#define FM_MAX_GANG_NODES 1024

typedef struct {
	uint32_t job_id;
	int32_t action;            /* FM_WAIT, FM_START, FM_PREEMPT, FM_FIRST_COME */
	char partition[FM_TEXT];   /* FM_START: where */
	/* FM_START: its nodes, as a Slurm hostlist ("g1", "g[1-4]") */
	char node[FM_TEXT];
	/* FM_START: GPUs it gets on each node (its own request, or one for
	 * a job that asked for none); 0 on a CPU slot. */
	uint32_t gpus;
	/* FM_START: the GPU type an untyped per-node request (or none) is
	 * given for this start, where its nodes have several; "" = as asked. */
	char gpu_type[FM_TEXT];
	/* FM_WAIT: shown to the user; "" keeps Slurm's own reason. */
	char reason[FM_TEXT];
	/* FM_WAIT: no slot the job may use is free; Slurm's "Resources"
	 * stands for `reason`, as backfill shows it. */
	int32_t for_resources;
	char note[FM_TEXT];        /* "" or a note for the admin comment */
	int32_t notice;            /* FM_PREEMPT: signal now, requeue later */
	/* FM_WAIT: when the plan expects the job to start (seconds since
	 * the epoch), for its StartTime; 0 = the plan did not place it. */
	double start_at;
} fm_decision_t;

#define FM_STARTED 1
#define FM_REFUSED 0

/* What became of one FM_START or FM_PREEMPT decision. */
typedef struct {
	uint32_t job_id;           /* as in the decision */
	uint32_t started_id;       /* the job that runs (an array task's own id) */
	/* FM_STARTED (FM_PREEMPT: signalled or requeued) or FM_REFUSED */
	int32_t result;
	int32_t preempt;           /* the outcome of an FM_PREEMPT decision */
	/* FM_REFUSED: for want of resources on the chosen node (Slurm's
	 * node selection weighs more than the plan's model); the plan
	 * leaves that node to others and tries the job elsewhere at once. */
	int32_t busy;
	double at;
	char reason[FM_TEXT];      /* FM_REFUSED: Slurm's words */
} fm_outcome_t;

typedef struct {
	uint32_t interval_ms;
	/* How often, between those ticks, the agent checks whether a job
	 * left a node or was submitted; 0 = never. */
	uint32_t event_poll_ms;
	/* Longest a cycle holds slurmctld's locks before it lets the
	 * controller's other threads in and takes them again. */
	uint32_t hold_ms;
	/* Managed partitions, comma-separated; "" = all. */
	char partitions[4 * FM_TEXT];
} fm_settings_t;

/* Implemented in Rust (src/plugin/), each checked at compile time against
 * its Rust definition (build.rs). Never unwind; errors are returned. Only
 * the agent thread calls these. */
/* The settings before fairmatch.conf is first read: IntervalMs,
 * EventPollMs and LockHoldMs's defaults, every partition managed. */
extern const fm_settings_t fairmatch_rs_defaults;
/* Reads fairmatch.conf beside `slurm_conf` (outside slurmctld's locks),
 * keeping what the planner learned; fills `out`. `requeue_delay`: the
 * seconds Slurm holds a requeued job before it may run again. At the
 * first load, takes back what was learned from `state_dir`/fairmatch_state
 * (slurmctld's StateSaveLocation), where it is saved from then on.
 * Returns 0, or -1 when the file was rejected and the previous settings
 * stay. */
int32_t fairmatch_rs_load_config(const char *slurm_conf, const char *state_dir,
				 uint32_t requeue_delay, fm_settings_t *out);
/* Fills out[0..cap) and returns the count, or -1 if no decision could be
 * made (jobs then stay with the first-come first-served fallback). */
/* Indices into snapshot->pending to check before the plan (at most cap);
 * 0 when those checked are enough, < 0 on error. */
int64_t fairmatch_rs_to_check(const fm_snapshot_t *snapshot, size_t *out,
			      size_t cap);
int64_t fairmatch_rs_plan(const fm_snapshot_t *snapshot, fm_decision_t *out,
			  size_t cap);
void fairmatch_rs_observe(const fm_outcome_t *outcomes, size_t count);
/* A cycle that plans nothing: learns the run times of snapshot->finished
 * (the plan does this itself). */
void fairmatch_rs_learn(const fm_snapshot_t *snapshot);
/* Seconds of slurmdbd's history to read now (LearnFromAccounting), while
 * nothing is learned yet; 0: none. */
double fairmatch_rs_accounting_wanted(void);
/* Runs read from slurmdbd, learned at the next plan; returns how many were
 * taken (the rest is over the planner's bound). */
size_t fairmatch_rs_add_accounting_runs(const fm_finished_t *runs,
					size_t count);
/* Drops the planner's state (at fini). */
void fairmatch_rs_shutdown(void);

/* Implemented in C (sched_fairmatch.c). The plugin symbols slurmctld looks
 * up are exported from Rust (a cdylib exports only Rust symbols) and
 * forward to the first three. */
int32_t fairmatch_shim_init(void);
void fairmatch_shim_fini(void);
void fairmatch_shim_reconfig(void);
void fairmatch_shim_log(int32_t level, const char *message);

#endif
