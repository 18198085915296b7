/*
 * Starting jobs, all or nothing. The caller holds the cycle locks.
 *
 * A start changes the job only for the length of one select_nodes() call:
 * the partition pointer (as backfill's _start_job does), the time limit
 * (cut to a deadline, as Slurm's schedulers cut it), the exclusion
 * bitmap (OR-ed with the nodes the start must avoid, then put back) and,
 * for a GPU start of a job that asked for none, its GRES request. If Slurm
 * refuses, every one of them is restored, so the job is exactly as its
 * user submitted it, and Slurm's reason for the refusal stays on the job.
 * If Slurm accepts, select_nodes() rebuilds the partition list with the
 * chosen partition first, as for any start.
 */

#include "fm_slurm.h"

uint64_t fm_started_count = 0;

/* Batch jobs allocated this cycle whose scripts wait for the state file
 * to hold the allocation (fm_launch_deferred). */
static fm_noted_jobs_t deferred = { 0 };

typedef struct {
	bool changed;
	char *tres_per_node;
	list_t *gres_list_req;
} gres_saved_t;

/* The request a start gives the job, or NULL to keep its own: one GPU
 * (of `type`, if given) for a job that asked for none; its own count of
 * GPUs per node, of `type`, for an untyped per-node request on nodes of
 * several types. A job that asked for GPUs otherwise keeps its request:
 * the plan gives it nodes of the type and width it asked for. */
static char *_gpu_request_for(job_record_t *job_ptr, bool gpu,
			      const char *type)
{
	uint32_t n = 0;
	char asked_type[FM_TEXT];
	if ((job_ptr->tres_per_job && job_ptr->tres_per_job[0]) ||
	    (job_ptr->tres_per_socket && job_ptr->tres_per_socket[0]) ||
	    xstrstr(job_ptr->tres_per_task, "gpu"))
		return NULL;
	if (job_ptr->tres_per_node && job_ptr->tres_per_node[0]) {
		if (!type || !type[0] ||
		    !fm_gpu_request(job_ptr->tres_per_node, &n, asked_type,
				    sizeof(asked_type)) ||
		    !n || asked_type[0])
			return NULL;
	} else if (!gpu) {
		return NULL;
	}
	if (!type || !type[0])
		return xstrdup(FM_GRES_GPU_ONE);
	/* FM_GRES_GPU_ONE is "gres/gpu:1" or, in 22.05, "gres:gpu:1". */
	char *req = xstrdup(FM_GRES_GPU_ONE);
	req[strlen(req) - 2] = '\0';
	xstrfmtcat(req, ":%s:%u", type, n ? n : 1);
	return req;
}

/* Makes the job ask for what _gpu_request_for() says, validated as
 * update_job() does. */
static int _request_gpu(job_record_t *job_ptr, gres_saved_t *saved,
			bool gpu, const char *type)
{
	job_details_t *d = job_ptr->details;
	char *gpu_one = _gpu_request_for(job_ptr, gpu, type);
	uint32_t num_tasks = d->num_tasks, min_nodes = d->min_nodes;
	uint32_t max_nodes = d->max_nodes, min_cpus = d->min_cpus;
	uint16_t ntasks_per_node = d->ntasks_per_node;
	uint16_t ntasks_per_socket = NO_VAL16, sockets_per_node = NO_VAL16;
	uint16_t cpus_per_task = d->orig_cpus_per_task;
	uint16_t ntasks_per_tres = NO_VAL16;
	list_t *gres = NULL;

	if (!gpu_one)
		return SLURM_SUCCESS;
	if (d->mc_ptr && d->mc_ptr->ntasks_per_socket != INFINITE16)
		ntasks_per_socket = d->mc_ptr->ntasks_per_socket;
	int rc = fm_gres_job_state_validate(
		job_ptr->cpus_per_tres, job_ptr->tres_freq,
		job_ptr->tres_per_job, gpu_one, job_ptr->tres_per_socket,
		job_ptr->tres_per_task, job_ptr->mem_per_tres, &num_tasks,
		&min_nodes, &max_nodes, &min_cpus, &ntasks_per_node,
		&ntasks_per_socket, &sockets_per_node, &cpus_per_task,
		&ntasks_per_tres, &gres);
	if (rc != SLURM_SUCCESS) {
		FREE_NULL_LIST(gres);
		xfree(gpu_one);
		return rc;
	}
	saved->changed = true;
	saved->tres_per_node = job_ptr->tres_per_node;
	saved->gres_list_req = job_ptr->gres_list_req;
	job_ptr->tres_per_node = gpu_one;
	job_ptr->gres_list_req = gres;
	job_set_req_tres(job_ptr, false);
	return SLURM_SUCCESS;
}

static void _restore_gres(job_record_t *job_ptr, gres_saved_t *saved)
{
	if (!saved->changed)
		return;
	xfree(job_ptr->tres_per_node);
	job_ptr->tres_per_node = saved->tres_per_node;
	FREE_NULL_LIST(job_ptr->gres_list_req);
	job_ptr->gres_list_req = saved->gres_list_req;
	job_set_req_tres(job_ptr, false);
}

static void _drop_saved_gres(gres_saved_t *saved)
{
	if (!saved->changed)
		return;
	xfree(saved->tres_per_node);
	FREE_NULL_LIST(saved->gres_list_req);
}

/* After select_nodes() allocated the job: hand it to its srun, as the
 * main scheduler does, or queue its batch script for fm_launch_deferred().
 * Slurm's state save trails by up to 5 s; a script launched before the
 * file holds its allocation runs twice if slurmctld dies in between. */
static void _launch(job_record_t *job_ptr)
{
	last_job_update = time(NULL);
	if (job_ptr->batch_flag == 0) {
		srun_allocate(job_ptr);
	} else if (!IS_JOB_CONFIGURING(job_ptr)) {
		fm_noted_jobs_add(&deferred, job_ptr);
	}
}

size_t fm_deferred_count(void)
{
	return deferred.n;
}

/* The sleep between two launches' holds. Each launch wakes Slurm's agent,
 * then a slurmd and its slurmstepd; with 1 ms (the copy's yield) the next
 * hold often began while they still had the CPUs, and waited for one
 * under the locks. Alternating runs of scripts/bench-plugin.sh, run times
 * spread over 0.5 to 1.5 s: a cycle's locks at p99 7.3 ms with 3 ms (5
 * runs), 9.1 ms with 1 ms (5 runs); no change measurable in waves, nor in
 * throughput. */
#define LAUNCH_GAP_US 3000

size_t fm_launch_deferred(fm_hold_t *h)
{
	size_t launched = 0;
	for (size_t i = 0; i < deferred.n; i++) {
		/* One launch per hold: each wakes Slurm's agent and then a
		 * slurmd, which take the CPUs while the launching thread
		 * holds the locks (a hold of 24 launches spent 30 to 50 ms
		 * waiting for a CPU, 5 ms on one). Allocated jobs are
		 * launched whatever changed meanwhile: each is found again
		 * by id. */
		if (i > 0)
			fm_hold_yield_us(h, LAUNCH_GAP_US);
		h->worked = true;
		job_record_t *job_ptr = fm_noted_job(&deferred, i);
		/* Cancelled or requeued meanwhile: Slurm has dealt with it. */
		if (!job_ptr || !IS_JOB_RUNNING(job_ptr) ||
		    IS_JOB_CONFIGURING(job_ptr) || !job_ptr->batch_flag)
			continue;
		launch_job(job_ptr);
		launched++;
	}
	deferred.n = 0;
	return launched;
}

/*
 * Tries to start the job in `part_ptr`, on the nodes of `only` if given
 * (a gang gets exactly those), on no node of `avoid`, with one GPU if
 * `gpu`. On refusal the job is left as it was.
 */
static int _try_start(job_record_t *job_ptr, part_record_t *part_ptr,
		      bitstr_t *only, bool gpu, const char *gpu_type,
		      bitstr_t *avoid)
{
	job_details_t *d = job_ptr->details;
	part_record_t *saved_part = job_ptr->part_ptr;
	bitstr_t *saved_exc = d->exc_node_bitmap;
	bool array_head = job_ptr->array_recs != NULL;
	uint32_t array_id = job_ptr->array_job_id;
	gres_saved_t gres = { 0 };
	uint32_t saved_limit = job_ptr->time_limit;
	int rc;

	if (fm_deadline_blocks(job_ptr))
		return ESLURM_INVALID_TIME_LIMIT;
	if ((rc = _request_gpu(job_ptr, &gres, gpu, gpu_type)) !=
	    SLURM_SUCCESS)
		return rc;
	bitstr_t *exc = saved_exc ? bit_copy(saved_exc) :
				    bit_alloc(node_record_count);
	if (avoid)
		bit_or(exc, avoid);
	if (only) {
		bitstr_t *others = bit_copy(only);
		bit_not(others);
		bit_or(exc, others);
		FREE_NULL_BITMAP(others);
	}
	d->exc_node_bitmap = exc;
	job_ptr->part_ptr = part_ptr;
	/* A refusal sets Slurm's own reason; ours must not stand for it. */
	job_ptr->state_reason = WAIT_NO_REASON;
	xfree(job_ptr->state_desc);

	uint32_t deadline_limit = fm_deadline_limit(job_ptr, part_ptr);
	if (deadline_limit)
		job_ptr->time_limit = deadline_limit;

	/* The main scheduler tests licenses itself before select_nodes(). */
	if (license_job_test(job_ptr, time(NULL), true) != SLURM_SUCCESS) {
		job_ptr->state_reason = WAIT_LICENSES;
		xfree(job_ptr->state_desc);
		rc = ESLURM_ACCOUNTING_POLICY;
	} else {
		rc = fm_select_nodes(job_ptr, false, NULL, false,
				     SLURMDB_JOB_FLAG_SCHED);
	}

	/* An array's pending remainder was split off with our exclusions. */
	if (array_head) {
		job_record_t *rest = find_job_record(array_id ? array_id :
						     job_ptr->array_job_id);
		if (rest && rest != job_ptr && rest->details) {
			FREE_NULL_BITMAP(rest->details->exc_node_bitmap);
			if (saved_exc)
				rest->details->exc_node_bitmap =
					bit_copy(saved_exc);
		}
	}
	if (job_ptr->details) {	/* select_nodes() may have replaced it */
		FREE_NULL_BITMAP(job_ptr->details->exc_node_bitmap);
		job_ptr->details->exc_node_bitmap = saved_exc;
	} else {
		FREE_NULL_BITMAP(saved_exc);
	}

	if (rc == SLURM_SUCCESS) {
		_drop_saved_gres(&gres);
		_launch(job_ptr);
		fm_started_count++;
	} else {
		job_ptr->part_ptr = saved_part;
		job_ptr->time_limit = saved_limit;
		_restore_gres(job_ptr, &gres);
		if (job_ptr->state_reason == WAIT_NO_REASON)
			job_ptr->state_reason = WAIT_RESOURCES;
		last_job_update = time(NULL);
	}
	return rc;
}

static bool _fits_before(job_record_t *job_ptr, time_t when)
{
	if (job_ptr->time_limit == NO_VAL || job_ptr->time_limit == INFINITE)
		return false;
	return time(NULL) + (time_t) job_ptr->time_limit * 60 <= when;
}

/* Nodes a job must not use: the reservation, unless the job's time
 * limit (which Slurm enforces) ends before it begins. */
static bitstr_t *_avoid(job_record_t *job_ptr, const fm_reservation_t *resv)
{
	if (!resv->nodes || resv->job_id == job_ptr->job_id ||
	    _fits_before(job_ptr, resv->from))
		return NULL;
	return resv->nodes;
}

static int _same_ptr(void *x, void *key)
{
	return x == key;
}

static bool _has_part(job_record_t *job_ptr, part_record_t *part_ptr)
{
	if (job_ptr->part_ptr_list)
		return list_find_first(job_ptr->part_ptr_list, _same_ptr,
				       part_ptr) != NULL;
	return job_ptr->part_ptr == part_ptr;
}

static void _set_reason(job_record_t *job_ptr, const char *reason)
{
	if (job_ptr->state_reason == WAIT_PRIORITY &&
	    !xstrcmp(job_ptr->state_desc, reason))
		return;
	job_ptr->state_reason = WAIT_PRIORITY;
	xfree(job_ptr->state_desc);
	job_ptr->state_desc = xstrdup(reason);
	last_job_update = time(NULL);
}

/* CPUs `job_ptr` holds on node `index`. */
static uint32_t _cpus_held_on(job_record_t *job_ptr, int index)
{
	job_resources_t *r = job_ptr->job_resrcs;
	if (!r || !r->node_bitmap || !r->cpus ||
	    index >= bit_size(r->node_bitmap) || !bit_test(r->node_bitmap, index))
		return 0;
	int k = bit_set_count_range(r->node_bitmap, 0, index);
	return r->cpus[k];
}

/*
 * PreemptMode=SUSPEND,GANG: select_nodes() places a job of a higher
 * PriorityTier on CPUs that lower-tier jobs hold, and gang scheduling then
 * suspends them, whatever their PreemptExemptTime: before 26.05 nothing
 * checks it on that path, and 26.05 rebuilds its exempt cores at most once
 * a second, so a start in the second a job began misses it. A start that
 * needs more CPUs than are free on the node therefore waits while a
 * lower-tier job there is within its exempt time, as backfill's does.
 */
static bool _would_suspend_exempt(job_record_t *job_ptr,
				  part_record_t *part_ptr,
				  node_record_t *node_ptr)
{
	if (!(slurm_conf.preempt_mode & PREEMPT_MODE_GANG) ||
	    xstrcmp(slurm_conf.preempt_type, "preempt/partition_prio"))
		return false;
	uint32_t held = 0;
	bool exempt = false;
	job_record_t *other;
	list_itr_t *it = list_iterator_create(job_list);
	while ((other = list_next(it))) {
		if (other == job_ptr || !IS_JOB_RUNNING(other))
			continue;
		uint32_t cpus = _cpus_held_on(other, node_ptr->index);
		if (!cpus)
			continue;
		held += cpus;
		if (!exempt && other->part_ptr &&
		    other->part_ptr->priority_tier < part_ptr->priority_tier &&
		    acct_policy_is_job_preempt_exempt(other))
			exempt = true;
	}
	list_iterator_destroy(it);
	uint32_t need = job_ptr->details ? MAX(job_ptr->details->min_cpus, 1) : 1;
	return exempt && held + need > node_ptr->cpus;
}

/* Whether a start on any node of `only` would suspend an exempt job. */
static bool _any_would_suspend_exempt(job_record_t *job_ptr,
				      part_record_t *part_ptr, bitstr_t *only)
{
	for (int64_t i = bit_ffs(only); i >= 0 && i < bit_size(only); i++)
		if (bit_test(only, i) && node_record_table_ptr[i] &&
		    _would_suspend_exempt(job_ptr, part_ptr,
					  node_record_table_ptr[i]))
			return true;
	return false;
}

/* The nodes a start names (a hostlist), when every one of them is still
 * in `part_ptr` and available; else NULL. */
static bitstr_t *_chosen_nodes(const char *names, part_record_t *part_ptr)
{
	bitstr_t *only = NULL;
	if (!part_ptr || !part_ptr->node_bitmap || !names[0] ||
	    fm_node_name2bitmap((char *) names, false, &only) != 0 ||
	    !bit_set_count(only)) {
		FREE_NULL_BITMAP(only);
		return NULL;
	}
	for (int64_t i = bit_ffs(only); i >= 0 && i < bit_size(only); i++)
		if (bit_test(only, i) &&
		    (!bit_test(part_ptr->node_bitmap, i) ||
		     !bit_test(avail_node_bitmap, i))) {
			FREE_NULL_BITMAP(only);
			return NULL;
		}
	return only;
}

static void _set_resources(job_record_t *job_ptr)
{
	if (job_ptr->state_reason == WAIT_RESOURCES && !job_ptr->state_desc)
		return;
	job_ptr->state_reason = WAIT_RESOURCES;
	xfree(job_ptr->state_desc);
	last_job_update = time(NULL);
}

static void _refused(fm_outcome_t *o, job_record_t *job_ptr, int rc)
{
	const char *why = (job_ptr && job_ptr->state_reason != WAIT_NO_REASON) ?
		fm_job_reason_string(job_ptr->state_reason) : slurm_strerror(rc);
	o->result = FM_REFUSED;
	/* Only "busy" says the node would do once freer; a node that can
	 * never hold this job (too little memory, say) is the job's problem,
	 * not the node's, and must stay in other jobs' plans. */
	o->busy = rc == ESLURM_NODES_BUSY;
	strlcpy(o->reason, why, sizeof(o->reason));
}

size_t fm_apply(const fm_decision_t *decisions, int64_t count,
		const fm_reservation_t *resv, fm_outcome_t *outcomes,
		fm_hold_t *h)
{
	size_t n = 0;
	for (int64_t i = 0; i < count; i++) {
		const fm_decision_t *dec = &decisions[i];
		/* Each decision finds its job again by id, so a yield between
		 * two of them is safe. */
		if (fm_hold_spent(h) && !fm_hold_yield(h))
			break;
		h->worked = true;
		if (dec->action == FM_FIRST_COME) {
			fm_hand_to_first_come(dec->job_id);
			continue;
		}
		if (dec->action == FM_PREEMPT) {
			fm_outcome_t *p = &outcomes[n++];
			p->job_id = dec->job_id;
			p->at = fm_now();
			p->preempt = 1;
			fm_preempt(dec, p);
			continue;
		}
		job_record_t *job_ptr = find_job_record(dec->job_id);
		if (dec->action == FM_WAIT && !dec->reason[0] &&
		    !dec->note[0] && !dec->for_resources) {
			/* Only a start time, for a job past the check window:
			 * there may be thousands each cycle, so no more checks
			 * than a pending job needs to show one. */
			if (job_ptr && IS_JOB_PENDING(job_ptr))
				job_ptr->start_time = dec->start_at > 0 ?
					(time_t) dec->start_at : 0;
			continue;
		}
		bool live = job_ptr && fm_startable(job_ptr) &&
			    fm_managed(job_ptr);
		fm_outcome_t *o = NULL;
		if (dec->action == FM_START) {
			o = &outcomes[n++];
			o->job_id = dec->job_id;
			o->at = fm_now();
			if (!live) {
				/* Not the node's doing: it stays in the plans. */
				o->result = FM_REFUSED;
				o->busy = 0;
				strlcpy(o->reason, "job is no longer pending",
					sizeof(o->reason));
				continue;
			}
		} else if (!live) {
			continue;
		}
		if (dec->note[0] && xstrcmp(job_ptr->admin_comment, dec->note)) {
			info("%pJ %s", job_ptr, dec->note);
			xfree(job_ptr->admin_comment);
			job_ptr->admin_comment = xstrdup(dec->note);
		}
		if (dec->action == FM_WAIT) {
			/* The plan's expected start, as backfill sets it for
			 * the jobs it tests (squeue --start); a job the plan
			 * no longer places has none, not a stale one. */
			job_ptr->start_time = dec->start_at > 0 ?
				(time_t) dec->start_at : 0;
		}
		if (dec->action != FM_START) {
			if (dec->for_resources)
				_set_resources(job_ptr);
			else if (dec->reason[0])
				_set_reason(job_ptr, dec->reason);
			continue;
		}
		part_record_t *part_ptr = find_part_record((char *) dec->partition);
		bitstr_t *only = _chosen_nodes(dec->node, part_ptr);
		if (!part_ptr || !only || !_has_part(job_ptr, part_ptr)) {
			FREE_NULL_BITMAP(only);
			_refused(o, NULL, ESLURM_NODES_BUSY);
			strlcpy(o->reason, "chosen node or partition went away",
				sizeof(o->reason));
			continue;
		}
		if (_any_would_suspend_exempt(job_ptr, part_ptr, only)) {
			FREE_NULL_BITMAP(only);
			/* Not busy: the job sits out a while, then is tried
			 * again. */
			o->result = FM_REFUSED;
			o->busy = 0;
			strlcpy(o->reason, "PreemptExemptTime",
				sizeof(o->reason));
			continue;
		}
		uint32_t id = job_ptr->job_id;
		int rc = _try_start(job_ptr, part_ptr, only, dec->gpus > 0,
				    dec->gpu_type, _avoid(job_ptr, resv));
		FREE_NULL_BITMAP(only);
		if (rc == SLURM_SUCCESS) {
			o->result = FM_STARTED;
			o->started_id = job_ptr->job_id;
			info("fairmatch: started %pJ in %s on %s", job_ptr,
			     job_ptr->part_ptr ? job_ptr->part_ptr->name : "?",
			     job_ptr->nodes);
		} else {
			/* Logged once per job in a row, as backfill does. */
			static uint32_t last_refused = 0;
			_refused(o, find_job_record(id), rc);
			if (id != last_refused)
				info("fairmatch: JobId=%u not started in %s on %s: %s",
				     id, dec->partition, dec->node, o->reason);
			last_refused = id;
		}
	}
	return n;
}

/* Tries each of the job's partitions that Slurm's limits accept now. */
static int _start_anywhere(job_record_t *job_ptr, bitstr_t *avoid)
{
	int rc = ESLURM_REQUESTED_PART_CONFIG_UNAVAILABLE;
	part_record_t *part_ptr;
	list_t *parts = fm_job_partitions(job_ptr);

	while ((part_ptr = list_pop(parts))) {
		int reason = fm_limits_in(job_ptr, part_ptr);
		if (reason != WAIT_NO_REASON) {
			job_ptr->state_reason = reason;
			xfree(job_ptr->state_desc);
			continue;
		}
		rc = _try_start(job_ptr, part_ptr, NULL, false, NULL, avoid);
		if (rc == SLURM_SUCCESS)
			break;
	}
	FREE_NULL_LIST(parts);
	return rc;
}

/* Holds back, for `job_ptr`, the nodes and start time Slurm's will-run
 * test gives it, as backfill reserves for the head of its queue; squeue
 * --start shows them. */
static void _reserve(job_record_t *job_ptr, fm_reservation_t *resv)
{
	will_run_response_msg_t *resp = NULL;
	bitstr_t *nodes = NULL;
	if (job_start_data(job_ptr, &resp) != SLURM_SUCCESS || !resp)
		return;
	if (resp->node_list &&
	    fm_node_name2bitmap(resp->node_list, false, &nodes) == 0) {
		resv->nodes = nodes;
		resv->from = MAX(resp->start_time, time(NULL));
		resv->job_id = job_ptr->job_id;
		job_ptr->start_time = resv->from;
		xfree(job_ptr->sched_nodes);
		job_ptr->sched_nodes = xstrdup(resp->node_list);
		debug("fairmatch: %pJ reserved %s from %ld", job_ptr,
		      resp->node_list, (long) resv->from);
	} else {
		FREE_NULL_BITMAP(nodes);
	}
	slurm_free_will_run_response_msg(resp);
}

/* A waiting job of a managed partition whose shape the plan does not
 * model says why in squeue, beside what it waits for. */
static void _say_unplanned(job_record_t *job_ptr)
{
	const char *why = fm_unplanned_why(job_ptr);
	if (!why || (job_ptr->state_reason != WAIT_RESOURCES &&
		     job_ptr->state_reason != WAIT_PRIORITY &&
		     job_ptr->state_reason != WAIT_NO_REASON))
		return;
	char *desc = xstrdup_printf("fairmatch: not planned (%s): first come first served, %s",
				    why, fm_job_reason_string(
						 job_ptr->state_reason == WAIT_NO_REASON ?
						 WAIT_RESOURCES : job_ptr->state_reason));
	if (xstrcmp(job_ptr->state_desc, desc)) {
		xfree(job_ptr->state_desc);
		job_ptr->state_desc = desc;
		last_job_update = time(NULL);
	} else {
		xfree(desc);
	}
}

static int _priority_cmp(void *x, void *y)
{
	job_record_t *a = *(job_record_t **) x, *b = *(job_record_t **) y;
	if (a->priority != b->priority)
		return a->priority > b->priority ? -1 : 1;
	if (a->details->submit_time != b->details->submit_time)
		return a->details->submit_time < b->details->submit_time ? -1 : 1;
	return a->job_id < b->job_id ? -1 : (a->job_id > b->job_id);
}

/* In priority order, starts what fits and reserves for the first job that
 * does not: later jobs may use its nodes only if they end before it.
 * Empties the queue; returns how many jobs started. */
static size_t _easy_start(list_t *queue, fm_reservation_t *resv)
{
	job_record_t *job_ptr;
	size_t n = 0;
	list_sort(queue, _priority_cmp);
	while ((job_ptr = list_pop(queue))) {
		uint32_t id = job_ptr->job_id;
		bool array = job_ptr->array_recs != NULL;
		bool started = false;
		for (int tries = array ? FM_MAX_TASKS : 1; tries > 0; tries--) {
			if (_start_anywhere(job_ptr, _avoid(job_ptr, resv)) !=
			    SLURM_SUCCESS)
				break;
			started = true;
			n++;
			info("fairmatch: started %pJ first-come first-served on %s",
			     job_ptr, job_ptr->nodes);
			job_ptr = find_job_record(id);	/* an array's rest */
			if (!array || !job_ptr || !fm_startable(job_ptr))
				break;
		}
		if (!started && job_ptr)
			_say_unplanned(job_ptr);
		/* Only a job that waits for nodes gets them reserved, not
		 * one a limit or a license holds back. */
		if (!started && job_ptr && !resv->nodes && !job_ptr->het_job_id &&
		    (job_ptr->state_reason == WAIT_RESOURCES ||
		     job_ptr->state_reason == WAIT_NO_REASON ||
		     job_ptr->state_reason == WAIT_PRIORITY))
			_reserve(job_ptr, resv);
	}
	return n;
}

size_t fm_unmanaged_start(list_t *queue, fm_reservation_t *resv)
{
	return _easy_start(queue, resv);
}

void fm_fallback(void)
{
	fm_reservation_t resv = { 0 };
	list_t *queue = list_create(NULL);
	job_record_t *job_ptr;
	list_itr_t *it = list_iterator_create(job_list);
	while ((job_ptr = list_next(it)))
		if (fm_startable(job_ptr))
			list_append(queue, job_ptr);
	list_iterator_destroy(it);
	_easy_start(queue, &resv);
	FREE_NULL_LIST(queue);
	fm_free_reservation(&resv);
}

void fm_free_reservation(fm_reservation_t *resv)
{
	FREE_NULL_BITMAP(resv->nodes);
	resv->job_id = 0;
}
