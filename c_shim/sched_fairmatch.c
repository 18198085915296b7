/*
 * sched/fairmatch: the thin C side of the plugin, for Slurm 22.05.
 *
 * The plugin symbols (plugin_name, plugin_type, plugin_version, init,
 * fini, sched_p_reconfig) are defined in Rust (src/plugin/) and call
 * fairmatch_shim_start/stop/reconfig here. This file does two jobs only:
 *
 *  1. Under slurmctld's locks, copy pending jobs, running jobs, partitions
 *     and nodes into the plain structs of fairmatch_shim.h.
 *  2. Under the locks again, re-validate and apply Rust's decisions:
 *     rewrite the job's partition and GRES through update_job() (the path
 *     `scontrol update job` takes), then start it with select_nodes() on
 *     the chosen node, as backfill's _start_job() does.
 *
 * The decision itself is made with no lock held.
 *
 * Order control: fairmatch is the only thing that starts jobs. It prepends
 * "defer,sched_interval=-1" to SchedulerParameters, so Slurm neither starts
 * jobs at submit time nor runs its main scheduling loop. Jobs fairmatch does
 * not model (multi-node, arrays, heterogeneous, other GRES) and, if the
 * Rust side fails, all jobs are started first-come first-served below, so
 * the cluster keeps working.
 */

#include "config.h"

#include <pthread.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"

#include "src/common/bitstring.h"
#include "src/common/list.h"
#include "src/common/log.h"
#include "src/common/macros.h"
#include "src/common/node_conf.h"
#include "src/common/slurm_protocol_api.h"
#include "src/common/uid.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"

#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"
#include "src/slurmctld/job_scheduler.h"
#include "src/slurmctld/node_scheduler.h"
#include "src/slurmctld/srun_comm.h"

#include "fairmatch_shim.h"

#define REQUIRED_PARAMS "defer,sched_interval=-1"
/* Look again at least this often even when nothing changed, so estimates
 * that ran out are noticed. */
#define MAX_IDLE_SECONDS 5

static pthread_t agent_thread;
static pthread_mutex_t term_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t term_cond = PTHREAD_COND_INITIALIZER;
static bool stop_agent = false;
static time_t last_finished_scan = 0;

/* Locks for both the copy and the apply phase: update_job() and
 * select_nodes() need job and node write locks. */
static const slurmctld_lock_t cycle_locks = {
	.conf = READ_LOCK, .job = WRITE_LOCK, .node = WRITE_LOCK,
	.part = READ_LOCK, .fed = READ_LOCK,
};

void fairmatch_shim_log(int32_t level, const char *message)
{
	switch (level) {
	case 1:
		error("fairmatch: %s", message);
		break;
	case 2:
		info("fairmatch: warning: %s", message);
		break;
	case 3:
		info("fairmatch: %s", message);
		break;
	case 4:
		debug("fairmatch: %s", message);
		break;
	default:
		debug2("fairmatch: %s", message);
	}
}

static double _now(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	return tv.tv_sec + tv.tv_usec / 1e6;
}

/* Slurm must not start jobs behind fairmatch's back. Prepending wins over
 * any later value, since Slurm parses the first occurrence. Runs under
 * slurmctld's config lock (init and reconfigure hold it). */
static void _ensure_sched_params(void)
{
	char *params = slurm_conf.sched_params;
	if (xstrcasestr(params, "defer") &&
	    xstrcasestr(params, "sched_interval=-1"))
		return;
	char *updated = NULL;
	if (params && params[0])
		xstrfmtcat(updated, "%s,%s", REQUIRED_PARAMS, params);
	else
		updated = xstrdup(REQUIRED_PARAMS);
	info("fairmatch: SchedulerParameters=%s (fairmatch starts jobs itself)",
	     updated);
	xfree(slurm_conf.sched_params);
	slurm_conf.sched_params = updated;
	slurm_conf.last_update = time(NULL);
}

static bool _is_gpu_one(const char *tres)
{
	return !xstrcmp(tres, "gres:gpu:1") || !xstrcmp(tres, "gres/gpu:1") ||
	       !xstrcmp(tres, "gres/gpu=1");
}

/* Whether every partition the job may use is managed by fairmatch. */
static bool _partitions_managed(job_record_t *job_ptr)
{
	if (job_ptr->part_ptr_list) {
		bool all = true;
		part_record_t *part_ptr;
		ListIterator it = list_iterator_create(job_ptr->part_ptr_list);
		while ((part_ptr = list_next(it)))
			all = all && fairmatch_rs_manages(part_ptr->name);
		list_iterator_destroy(it);
		return all;
	}
	return job_ptr->part_ptr && fairmatch_rs_manages(job_ptr->part_ptr->name);
}

/* Jobs the matching models: one node, one slot, not held, ready to run. */
static bool _managed(job_record_t *job_ptr)
{
	struct job_details *d = job_ptr->details;
	if (!d || job_ptr->het_job_id || job_ptr->array_recs)
		return false;
	if (d->min_nodes > 1 || d->max_nodes > 1)
		return false;
	if (job_ptr->tres_per_node && job_ptr->tres_per_node[0] &&
	    !_is_gpu_one(job_ptr->tres_per_node))
		return false;
	return _partitions_managed(job_ptr);
}

static bool _startable(job_record_t *job_ptr)
{
	return IS_JOB_PENDING(job_ptr) && !IS_JOB_COMPLETING(job_ptr) &&
	       job_ptr->priority != 0 && job_independent(job_ptr);
}

static double _limit_seconds(job_record_t *job_ptr)
{
	if (job_ptr->time_limit == NO_VAL || job_ptr->time_limit == INFINITE)
		return -1.0;
	return job_ptr->time_limit * 60.0;
}

static char *_user(job_record_t *job_ptr)
{
	if (job_ptr->user_name)
		return xstrdup(job_ptr->user_name);
	return uid_to_string_cached(job_ptr->user_id) ?
		xstrdup(uid_to_string_cached(job_ptr->user_id)) : xstrdup("");
}

static void _copy_job(job_record_t *job_ptr, fm_job_t *j)
{
	j->job_id = job_ptr->job_id;
	j->user = _user(job_ptr);
	j->account = xstrdup(job_ptr->account ? job_ptr->account : "");
	j->name = xstrdup(job_ptr->name ? job_ptr->name : "");
	j->comment = xstrdup(job_ptr->comment ? job_ptr->comment : "");
	j->time_limit = _limit_seconds(job_ptr);
	j->partitions = xstrdup(job_ptr->partition ? job_ptr->partition : "");
	j->cpus = job_ptr->details ? job_ptr->details->min_cpus : 1;
	j->submit = job_ptr->details ? job_ptr->details->submit_time : 0;
}

static void _free_job(fm_job_t *j)
{
	xfree(j->user);
	xfree(j->account);
	xfree(j->name);
	xfree(j->comment);
	xfree(j->partitions);
	xfree(j->run_partition);
	xfree(j->run_node);
}

/* Phase 1: copy what the decision needs. Caller holds cycle_locks. */
static void _snapshot(fm_snapshot_t *s)
{
	node_record_t *node_ptr;
	part_record_t *part_ptr;
	job_record_t *job_ptr;
	ListIterator it;
	/* Finished jobs are taken from [previous scan's second, this
	 * second): end times have whole-second resolution, so a job that
	 * ends in the current second waits for a later scan and is never
	 * counted twice. */
	time_t scan_from = last_finished_scan;

	memset(s, 0, sizeof(*s));
	s->now = _now();
	time_t scan_to = (time_t) s->now;
	last_finished_scan = scan_to;

	fm_node_t *nodes = xcalloc(node_record_count + 1, sizeof(fm_node_t));
	for (int i = 0; (node_ptr = next_node(&i)); i++) {
		fm_node_t *n = &nodes[node_ptr->index];
		n->name = xstrdup(node_ptr->name);
		n->cpus = node_ptr->config_ptr ? node_ptr->config_ptr->cpus :
						 node_ptr->cpus;
		n->gres = xstrdup(node_ptr->config_ptr &&
				  node_ptr->config_ptr->gres ?
				  node_ptr->config_ptr->gres : "");
		n->available = !IS_NODE_DOWN(node_ptr) &&
			       !IS_NODE_DRAIN(node_ptr) &&
			       !IS_NODE_NO_RESPOND(node_ptr) &&
			       !IS_NODE_FUTURE(node_ptr);
	}
	for (int i = 0; i < node_record_count; i++)
		if (!nodes[i].name) {	/* a hole in the table */
			nodes[i].name = xstrdup("");
			nodes[i].gres = xstrdup("");
		}
	s->nodes = nodes;
	s->n_nodes = node_record_count;

	fm_partition_t *parts = xcalloc(list_count(part_list) + 1,
					sizeof(fm_partition_t));
	size_t np = 0;
	it = list_iterator_create(part_list);
	while ((part_ptr = list_next(it))) {
		fm_partition_t *p = &parts[np++];
		uint32_t *idx = xcalloc(node_record_count + 1, sizeof(uint32_t));
		size_t k = 0;
		p->name = xstrdup(part_ptr->name);
		for (int i = 0; part_ptr->node_bitmap && (node_ptr = next_node(&i));
		     i++)
			if (bit_test(part_ptr->node_bitmap, node_ptr->index))
				idx[k++] = node_ptr->index;
		p->nodes = idx;
		p->n_nodes = k;
	}
	list_iterator_destroy(it);
	s->partitions = parts;
	s->n_partitions = np;

	int total = list_count(job_list);
	fm_job_t *pending = xcalloc(total + 1, sizeof(fm_job_t));
	fm_job_t *running = xcalloc(total + 1, sizeof(fm_job_t));
	fm_finished_t *finished = xcalloc(total + 1, sizeof(fm_finished_t));
	it = list_iterator_create(job_list);
	while ((job_ptr = list_next(it))) {
		if (_startable(job_ptr) && _managed(job_ptr)) {
			_copy_job(job_ptr, &pending[s->n_pending++]);
		} else if (IS_JOB_RUNNING(job_ptr) && job_ptr->part_ptr &&
			   fairmatch_rs_manages(job_ptr->part_ptr->name) &&
			   job_ptr->node_cnt == 1) {
			fm_job_t *j = &running[s->n_running++];
			_copy_job(job_ptr, j);
			j->run_partition = xstrdup(job_ptr->part_ptr->name);
			j->run_node = xstrdup(job_ptr->nodes);
			j->start = job_ptr->start_time;
		} else if (IS_JOB_COMPLETE(job_ptr) && job_ptr->part_ptr &&
			   job_ptr->start_time &&
			   job_ptr->end_time >= scan_from &&
			   job_ptr->end_time < scan_to) {
			fm_finished_t *f = &finished[s->n_finished++];
			f->user = _user(job_ptr);
			f->name = xstrdup(job_ptr->name ? job_ptr->name : "");
			f->partition = xstrdup(job_ptr->part_ptr->name);
			f->seconds = difftime(job_ptr->end_time,
					      job_ptr->start_time);
		}
	}
	list_iterator_destroy(it);
	s->pending = pending;
	s->running = running;
	s->finished = finished;
}

static void _free_snapshot(fm_snapshot_t *s)
{
	for (size_t i = 0; i < s->n_nodes; i++) {
		xfree(((fm_node_t *) s->nodes)[i].name);
		xfree(((fm_node_t *) s->nodes)[i].gres);
	}
	for (size_t i = 0; i < s->n_partitions; i++) {
		fm_partition_t *p = (fm_partition_t *) &s->partitions[i];
		xfree(p->name);
		xfree(p->nodes);
	}
	for (size_t i = 0; i < s->n_pending; i++)
		_free_job((fm_job_t *) &s->pending[i]);
	for (size_t i = 0; i < s->n_running; i++)
		_free_job((fm_job_t *) &s->running[i]);
	for (size_t i = 0; i < s->n_finished; i++) {
		fm_finished_t *f = (fm_finished_t *) &s->finished[i];
		xfree(f->user);
		xfree(f->name);
		xfree(f->partition);
	}
	xfree(s->nodes);
	xfree(s->partitions);
	xfree(s->pending);
	xfree(s->running);
	xfree(s->finished);
}

/* Sets the reason a pending job shows, touching the job only on change so
 * our own writes do not wake the agent again. */
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

/* Narrows the job to `partition` and, for a GPU start, requests one GPU,
 * through the same path as `scontrol update job`. */
static int _rewrite(job_record_t *job_ptr, const char *partition, bool gpu)
{
	bool same_part = !xstrcmp(job_ptr->partition, partition);
	bool same_gres = gpu ? _is_gpu_one(job_ptr->tres_per_node) :
			       !(job_ptr->tres_per_node &&
				 job_ptr->tres_per_node[0]);
	if (same_part && same_gres)
		return SLURM_SUCCESS;

	job_desc_msg_t desc;
	slurm_msg_t msg;
	slurm_init_job_desc_msg(&desc);
	slurm_msg_t_init(&msg);
	desc.job_id = job_ptr->job_id;
	desc.partition = xstrdup(partition);
	desc.tres_per_node = xstrdup(gpu ? "gres:gpu:1" : "");
	msg.data = &desc;
	msg.protocol_version = SLURM_PROTOCOL_VERSION;
	int rc = update_job(&msg, 0, false);
	xfree(desc.partition);
	xfree(desc.tres_per_node);
	xfree(desc.job_id_str);
	return rc;
}

/* After select_nodes() allocated the job: hand it to its srun or launch
 * its batch script, as the main scheduler does. */
static void _launch(job_record_t *job_ptr)
{
	last_job_update = time(NULL);
	if (job_ptr->batch_flag == 0)
		srun_allocate(job_ptr);
	else if (!IS_JOB_CONFIGURING(job_ptr))
		launch_job(job_ptr);
}

/* Starts the job on exactly `node_ptr`, as backfill's _start_job does. */
static int _start_on(job_record_t *job_ptr, node_record_t *node_ptr)
{
	struct job_details *d = job_ptr->details;
	bitstr_t *saved = d->exc_node_bitmap;
	bitstr_t *exclude = bit_alloc(node_record_count);
	bit_set_all(exclude);
	bit_clear(exclude, node_ptr->index);
	d->exc_node_bitmap = exclude;
	job_ptr->state_reason = WAIT_NO_REASON;
	xfree(job_ptr->state_desc);
	int rc = select_nodes(job_ptr, false, NULL, NULL, false,
			      SLURMDB_JOB_FLAG_SCHED);
	if (job_ptr->details) {	/* select_nodes() may replace it */
		FREE_NULL_BITMAP(job_ptr->details->exc_node_bitmap);
		job_ptr->details->exc_node_bitmap = saved;
	} else {
		FREE_NULL_BITMAP(saved);
	}
	if (rc == SLURM_SUCCESS)
		_launch(job_ptr);
	return rc;
}

/* Phase 2: re-validate each decision against the live state and apply. */
static void _apply(const fm_decision_t *decisions, int64_t count)
{
	for (int64_t i = 0; i < count; i++) {
		const fm_decision_t *dec = &decisions[i];
		job_record_t *job_ptr = find_job_record(dec->job_id);
		if (!job_ptr || !_startable(job_ptr) || !_managed(job_ptr))
			continue;
		if (dec->note[0] && xstrcmp(job_ptr->admin_comment, dec->note)) {
			info("%pJ %s", job_ptr, dec->note);
			xfree(job_ptr->admin_comment);
			job_ptr->admin_comment = xstrdup(dec->note);
		}
		if (dec->action != FM_START) {
			_set_reason(job_ptr, dec->reason);
			continue;
		}
		node_record_t *node_ptr = find_node_record((char *) dec->node);
		if (!node_ptr || IS_NODE_DOWN(node_ptr) ||
		    IS_NODE_DRAIN(node_ptr)) {
			_set_reason(job_ptr, "fairmatch: chosen node went away");
			continue;
		}
		int rc = _rewrite(job_ptr, dec->partition, dec->gpus > 0);
		if (rc != SLURM_SUCCESS) {
			error("fairmatch: cannot move %pJ to %s: %s", job_ptr,
			      dec->partition, slurm_strerror(rc));
			_set_reason(job_ptr, "fairmatch: partition change refused");
			continue;
		}
		rc = _start_on(job_ptr, node_ptr);
		if (rc == SLURM_SUCCESS) {
			info("fairmatch: started %pJ in %s on %s", job_ptr,
			     job_ptr->part_ptr ? job_ptr->part_ptr->name : "?",
			     job_ptr->nodes);
		} else {
			verbose("fairmatch: %pJ did not start on %s: %s",
				job_ptr, dec->node, slurm_strerror(rc));
			_set_reason(job_ptr, "fairmatch: start deferred, node busy");
		}
	}
}

static int _fifo_cmp(void *x, void *y)
{
	job_record_t *a = *(job_record_t **) x, *b = *(job_record_t **) y;
	if (a->priority != b->priority)
		return a->priority > b->priority ? -1 : 1;
	if (a->details->submit_time != b->details->submit_time)
		return a->details->submit_time < b->details->submit_time ? -1 : 1;
	return a->job_id < b->job_id ? -1 : (a->job_id > b->job_id);
}

/* First come, first served for what the matching does not decide. */
static void _fifo(bool everything)
{
	List queue = list_create(NULL);
	job_record_t *job_ptr;
	ListIterator it = list_iterator_create(job_list);
	while ((job_ptr = list_next(it)))
		if (job_ptr->details && _startable(job_ptr) &&
		    (everything || !_managed(job_ptr)))
			list_append(queue, job_ptr);
	list_iterator_destroy(it);
	list_sort(queue, _fifo_cmp);
	while ((job_ptr = list_pop(queue))) {
		if (select_nodes(job_ptr, false, NULL, NULL, false,
				 SLURMDB_JOB_FLAG_SCHED) != SLURM_SUCCESS)
			continue;
		info("fairmatch: started %pJ first-come first-served on %s",
		     job_ptr, job_ptr->nodes);
		_launch(job_ptr);
	}
	FREE_NULL_LIST(queue);
}

static void _cycle(void)
{
	fm_snapshot_t snap;
	lock_slurmctld(cycle_locks);
	_snapshot(&snap);
	unlock_slurmctld(cycle_locks);

	size_t cap = snap.n_pending;
	fm_decision_t *decisions = xcalloc(cap + 1, sizeof(fm_decision_t));
	int64_t count = fairmatch_rs_decide(&snap, decisions, cap);
	_free_snapshot(&snap);

	lock_slurmctld(cycle_locks);
	if (count >= 0)
		_apply(decisions, count);
	_fifo(count < 0);
	unlock_slurmctld(cycle_locks);
	xfree(decisions);
}

static bool _sleep_ms(uint32_t ms)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (long) (ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	slurm_mutex_lock(&term_lock);
	if (!stop_agent)
		slurm_cond_timedwait(&term_cond, &term_lock, &ts);
	bool stop = stop_agent;
	slurm_mutex_unlock(&term_lock);
	return !stop;
}

static void *_agent(void *arg)
{
	time_t seen_job = 0, seen_node = 0, seen_part = 0, last_cycle = 0;
	while (_sleep_ms(fairmatch_rs_interval_ms())) {
		time_t now = time(NULL);
		/* The update stamps have one-second resolution: while the
		 * last change is this second or the one before, a newer
		 * change may hide behind an equal stamp, so look anyway. */
		bool recent = difftime(now, last_job_update) <= 1 ||
			      difftime(now, last_node_update) <= 1;
		if (!recent && seen_job == last_job_update &&
		    seen_node == last_node_update &&
		    seen_part == last_part_update &&
		    difftime(now, last_cycle) < MAX_IDLE_SECONDS)
			continue;
		_cycle();
		/* Our own writes bumped these; do not wake for them. */
		seen_job = last_job_update;
		seen_node = last_node_update;
		seen_part = last_part_update;
		last_cycle = now;
	}
	return NULL;
}

int32_t fairmatch_shim_start(void)
{
	_ensure_sched_params();
	slurm_mutex_lock(&term_lock);
	stop_agent = false;
	slurm_mutex_unlock(&term_lock);
	slurm_thread_create(&agent_thread, _agent, NULL);
	return SLURM_SUCCESS;
}

void fairmatch_shim_stop(void)
{
	slurm_mutex_lock(&term_lock);
	stop_agent = true;
	slurm_cond_signal(&term_cond);
	slurm_mutex_unlock(&term_lock);
	if (agent_thread) {
		pthread_join(agent_thread, NULL);
		agent_thread = 0;
	}
}

void fairmatch_shim_reconfig(void)
{
	_ensure_sched_params();
}

const char *fairmatch_shim_conf_path(void)
{
	return slurm_conf.slurm_conf;
}
