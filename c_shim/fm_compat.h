/*
 * Slurm version differences the shim depends on (22.05 .. 26.05).
 * Included by fm_slurm.h after all of Slurm's headers.
 */
#ifndef FM_COMPAT_H
#define FM_COMPAT_H

/* --- types ---------------------------------------------------------- */

/* 23.11 added list_t/list_itr_t next to List/ListIterator; 24.05 dropped
 * List/ListIterator. The struct tags (xlist, listIterator) never changed.
 * 23.11 also turned `struct job_details` into the anonymous typedef
 * job_details_t. */
#if SLURM_VERSION_NUMBER < SLURM_VERSION_NUM(23, 11, 0)
typedef struct xlist list_t;
typedef struct listIterator list_itr_t;
typedef struct job_details job_details_t;
#endif

/* --- GRES request string --------------------------------------------- */

/* 22.05 parses "gres:gpu:1"; 23.02+ (slurm_get_next_tres) needs "gres/gpu:1". */
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 2, 0)
#define FM_GRES_GPU_ONE "gres/gpu:1"
#else
#define FM_GRES_GPU_ONE "gres:gpu:1"
#endif

/* --- SchedulerParameters ---------------------------------------------- */

/* What the shim puts first in SchedulerParameters. From 23.02 on,
 * "defer_batch" spares every batch submission Slurm's top-priority scan of
 * the job list (batch jobs never start at submit anyway) and leaves
 * interactive ones as they are; before, any "defer" defers interactive
 * jobs too, and --immediate would fail. */
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 2, 0)
#define FM_REQUIRED_SCHED_PARAMS "sched_interval=-1,defer_batch"
#else
#define FM_REQUIRED_SCHED_PARAMS "sched_interval=-1"
#endif

/* --- partition limits ----------------------------------------------- */

/* MaxCPUsPerSocket came in 23.02; before it a partition has no such
 * limit (0: none, as the shim reports it). */
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 2, 0)
#define FM_PART_MAX_CPUS_PER_SOCKET(part_ptr) \
	((part_ptr)->max_cpus_per_socket == INFINITE ? \
	 0 : (part_ptr)->max_cpus_per_socket)
#else
#define FM_PART_MAX_CPUS_PER_SOCKET(part_ptr) 0
#endif

/* --- functions whose signature changed ------------------------------ */

/* job_test_resv(): 23.11 replaced `bitstr_t **exc_core_bitmap` by
 * `resv_exc_t *`. The shim only wants the node bitmap. */
static inline int fm_job_test_resv(job_record_t *job_ptr, time_t *when,
				   bool move_time, bitstr_t **node_bitmap,
				   bool *resv_overlap, bool reboot)
{
	int rc;
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 11, 0)
	resv_exc_t resv_exc = { 0 };
	rc = job_test_resv(job_ptr, when, move_time, node_bitmap, &resv_exc,
			   resv_overlap, reboot);
	reservation_delete_resv_exc_parts(&resv_exc);
	/* Before 25.05 reservation_delete_resv_exc_parts() leaves these
	 * (owned copies); from 25.05 on it frees them and sets them NULL. */
	FREE_NULL_LIST(resv_exc.gres_list_exc);
	FREE_NULL_LIST(resv_exc.gres_list_inc);
#else
	bitstr_t *exc_cores = NULL;
	rc = job_test_resv(job_ptr, when, move_time, node_bitmap, &exc_cores,
			   resv_overlap, reboot);
	FREE_NULL_BITMAP(exc_cores);
#endif
	return rc;
}

/* Requeueing a running job as preemption does, by slurmctld's own user:
 * 25.11 replaced job_requeue(uid, job_id, msg, preempt, flags) by
 * job_requeue_internal(uid, job_ptr, preempt, flags) (checked against
 * 24.11 and 25.11). */
static inline int fm_job_requeue(job_record_t *job_ptr)
{
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 11, 0)
	return job_requeue_internal(slurm_conf.slurm_user_id, job_ptr, true,
				    0);
#else
	return job_requeue(slurm_conf.slurm_user_id, job_ptr->job_id, NULL,
			   true, 0);
#endif
}

/* Seconds a requeued job waits before it may run again (its new begin
 * time), read as job_mgr.c reads it: SchedulerParameters=requeue_delay=
 * from 25.11 on, else AuthInfo=cred_expire= (below 5 refused; 120 s by
 * default). The caller holds the conf read lock. */
static inline uint32_t fm_requeue_delay(void)
{
	char *tok;
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(25, 11, 0)
	if ((tok = xstrstr(slurm_conf.sched_params, "requeue_delay=")))
		return (uint32_t) MAX(atoi(tok + 14), 0);
#endif
	if ((tok = xstrstr(slurm_conf.authinfo, "cred_expire="))) {
		int seconds = atoi(tok + 12);
		if (seconds >= 5)
			return (uint32_t) seconds;
	}
	return 120;
}

/* select_nodes(): 24.05 bundled job_ptr/err_msg into job_node_select_t
 * and dropped the select_node_bitmap out-argument. */
static inline int fm_select_nodes(job_record_t *job_ptr, bool test_only,
				  char **err_msg, bool submission,
				  uint32_t scheduler_type)
{
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(24, 5, 0)
	job_node_select_t jns = { .job_ptr = job_ptr, .err_msg = err_msg };
	return select_nodes(&jns, test_only, submission, scheduler_type);
#else
	return select_nodes(job_ptr, test_only, NULL, err_msg, submission,
			    scheduler_type);
#endif
}

/* gres_job_state_validate(): 24.05 takes a gres_job_state_validate_t
 * (and added the in/out min_cpus, which must not be NULL).
 * *gres_list must be NULL on entry. */
static inline int fm_gres_job_state_validate(
	char *cpus_per_tres, char *tres_freq, char *tres_per_job,
	char *tres_per_node, char *tres_per_socket, char *tres_per_task,
	char *mem_per_tres, uint32_t *num_tasks, uint32_t *min_nodes,
	uint32_t *max_nodes, uint32_t *min_cpus, uint16_t *ntasks_per_node,
	uint16_t *ntasks_per_socket, uint16_t *sockets_per_node,
	uint16_t *cpus_per_task, uint16_t *ntasks_per_tres,
	list_t **gres_list)
{
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(24, 5, 0)
	gres_job_state_validate_t v = {
		.cpus_per_tres = cpus_per_tres,
		.mem_per_tres = mem_per_tres,
		.tres_freq = tres_freq,
		.tres_per_job = tres_per_job,
		.tres_per_node = tres_per_node,
		.tres_per_socket = tres_per_socket,
		.tres_per_task = tres_per_task,
		.cpus_per_task = cpus_per_task,
		.max_nodes = max_nodes,
		.min_cpus = min_cpus,
		.min_nodes = min_nodes,
		.ntasks_per_node = ntasks_per_node,
		.ntasks_per_socket = ntasks_per_socket,
		.ntasks_per_tres = ntasks_per_tres,
		.num_tasks = num_tasks,
		.sockets_per_node = sockets_per_node,
		.gres_list = gres_list,
	};
	return gres_job_state_validate(&v);
#else
	(void) min_cpus;
	return gres_job_state_validate(cpus_per_tres, tres_freq, tres_per_job,
				       tres_per_node, tres_per_socket,
				       tres_per_task, mem_per_tres, num_tasks,
				       min_nodes, max_nodes, ntasks_per_node,
				       ntasks_per_socket, sockets_per_node,
				       cpus_per_task, ntasks_per_tres,
				       gres_list);
#endif
}

/* node_name2bitmap(): 24.05 added `hostlist_t **invalid_hostlist`
 * (NULL keeps the old behaviour: an unknown name is EINVAL). */
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(24, 5, 0)
#define fm_node_name2bitmap(names, test_alias, bitmap) \
	node_name2bitmap((names), (test_alias), (bitmap), NULL)
#else
#define fm_node_name2bitmap(names, test_alias, bitmap) \
	node_name2bitmap((names), (test_alias), (bitmap))
#endif

/* job_reason_string() became job_state_reason_string() in 24.05
 * (src/common/job_state_reason.h), returning const char *. */
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(24, 5, 0)
#define fm_job_reason_string(r) job_state_reason_string(r)
#else
#define fm_job_reason_string(r) ((const char *) job_reason_string(r))
#endif

/* Threads: 26.05 routes slurm_thread_create() through its threadpool
 * (thread name first) and such a thread must be joined with
 * slurm_thread_join() (threadpool_join), not pthread_join(). */
#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(26, 5, 0)
#define fm_thread_create(id, func, arg) \
	slurm_thread_create("fairmatch", (id), (func), (arg))
#define fm_thread_join(id) slurm_thread_join(id)
#else
#define fm_thread_create(id, func, arg) \
	slurm_thread_create((id), (func), (arg))
#define fm_thread_join(id) \
	do { \
		pthread_join((id), NULL); \
		(id) = (pthread_t) 0; \
	} while (0)
#endif

#endif
