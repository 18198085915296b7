/*
 * Copies what a plan needs out of slurmctld into the plain structs of
 * fairmatch_shim.h. The caller holds the cycle locks; nothing here calls
 * Rust.
 *
 * Slurm's own rules are applied before the plan, so it never counts on a
 * start Slurm would refuse. Pending jobs are first copied cheaply; then
 * fm_check_pending() checks the ones the plan may weigh (the window Rust
 * asks for, see src/slurm/window.rs). A checked job carries only the
 * partitions job_limits_check() accepts now (partition state, time and
 * node limits, QOS and account access, memory) and only the nodes it may
 * use (--exclude, --nodelist, --constraint, advanced reservations), and
 * only if its licenses are free. A job that may start nowhere is marked
 * blocked, with Slurm's reason.
 */

#include "fm_slurm.h"

/*
 * The jobs' strings of the one live snapshot (only the agent thread takes
 * snapshots, one at a time), bump-allocated from blocks kept from cycle
 * to cycle: one xstrdup() per string was five mallocs per pending job
 * under the locks, and five frees after.
 */
typedef struct strings_block {
	struct strings_block *next;
	size_t used, size;
	char data[];
} strings_block_t;
#define STRINGS_BLOCK (256 * 1024)
static strings_block_t *strings_first = NULL, *strings_at = NULL;

static const char *_keep(const char *str)
{
	if (!str)
		str = "";
	size_t n = strlen(str) + 1;
	while (!strings_at || strings_at->used + n > strings_at->size) {
		strings_block_t *next = strings_at ? strings_at->next :
						     strings_first;
		if (!next || next->size < n) {
			size_t size = MAX(n, STRINGS_BLOCK);
			strings_block_t *b = xmalloc_nz(sizeof(*b) + size);
			b->size = size;
			b->used = 0;
			b->next = next;
			if (strings_at)
				strings_at->next = b;
			else
				strings_first = b;
			next = b;
		}
		strings_at = next;
	}
	char *kept = strings_at->data + strings_at->used;
	memcpy(kept, str, n);
	strings_at->used += n;
	return kept;
}

/* Every kept string is gone; the blocks stay for the next snapshot. */
static void _strings_reset(void)
{
	for (strings_block_t *b = strings_first; b; b = b->next)
		b->used = 0;
	strings_at = strings_first;
}

void fm_snapshot_release(void)
{
	while (strings_first) {
		strings_block_t *b = strings_first;
		strings_first = b->next;
		xfree(b);
	}
	strings_at = NULL;
}

list_t *fm_job_partitions(job_record_t *job_ptr)
{
	list_t *parts = list_create(NULL);
	if (job_ptr->part_ptr_list)
		list_append_list(parts, job_ptr->part_ptr_list);
	else if (job_ptr->part_ptr)
		list_append(parts, job_ptr->part_ptr);
	return parts;
}

int fm_limits_in(job_record_t *job_ptr, part_record_t *part_ptr)
{
	part_record_t *saved = job_ptr->part_ptr;
	job_ptr->part_ptr = part_ptr;
	int reason = job_limits_check(&job_ptr, false);
	job_ptr->part_ptr = saved;
	return reason;
}

/*
 * Reads a TRES request that asks for one GRES `name` of one kind only:
 * "gres/gpu:2", "gres/gpu:a100:2", "gres/gpu=1", "gres:gpu:1" (22.05),
 * "gres/gpu" (one). Fills the count and, when `type` is given, the type
 * ("" if none). An empty or NULL request asks for 0. Returns false for
 * anything else (other GRES, several entries; MIG profiles are types and
 * pass).
 */
static bool _gres_request(const char *tres, const char *name,
			  uint32_t *count, char *type, size_t type_cap)
{
	*count = 0;
	if (type && type_cap)
		type[0] = '\0';
	if (!tres || !tres[0])
		return true;
	if (strchr(tres, ','))
		return false;
	size_t len = strlen(name);
	if ((strncmp(tres, "gres/", 5) && strncmp(tres, "gres:", 5)) ||
	    strncmp(tres + 5, name, len))
		return false;
	const char *rest = tres + 5 + len;
	if (!rest[0]) {
		*count = 1;
		return true;
	}
	if (rest[0] != ':' && rest[0] != '=')
		return false;
	rest++;
	const char *colon = strchr(rest, ':');
	const char *number = colon ? colon + 1 : rest;
	char *end = NULL;
	unsigned long n = strtoul(number, &end, 10);
	bool numeric = end != number && !*end;
	size_t type_len;
	if (colon) {			/* "a100:2" */
		if (!numeric)
			return false;
		type_len = colon - rest;
	} else if (numeric) {		/* "2" */
		type_len = 0;
	} else {			/* "a100": one of that type */
		n = 1;
		type_len = strlen(rest);
	}
	if (n == 0 || n > 1024)
		return false;
	if (type && type_cap) {
		if (type_len >= type_cap)
			return false;
		memcpy(type, rest, type_len);
		type[type_len] = '\0';
	}
	*count = n;
	return true;
}

bool fm_gpu_request(const char *tres, uint32_t *count, char *type,
		    size_t type_cap)
{
	return _gres_request(tres, "gpu", count, type, type_cap);
}

/* Shards asked per node ("gres/shard:2"), untyped: a shard's type is its
 * GPU's, which the plan does not pick by. */
static bool _shard_request(const char *tres, uint32_t *count)
{
	char type[FM_TEXT];
	return _gres_request(tres, "shard", count, type, sizeof(type)) &&
	       !type[0];
}

/* The GPU entry of a list of TRES that may also name CPUs ("cpu=2,
 * gres/gpu:1", as --gpus-per-task beside --cpus-per-task from 23.11 on):
 * its count (0 without one) and type. False for other GRES. */
static bool _gpu_entry(const char *tres, uint32_t *count, char *type,
		       size_t type_cap)
{
	*count = 0;
	if (type && type_cap)
		type[0] = '\0';
	if (!tres || !tres[0])
		return true;
	/* Each item copied to the stack, not the heap: this runs for every
	 * job of every walk under slurmctld's locks, and from 23.11 on most
	 * jobs carry a "cpu=N" here. */
	bool seen = false;
	for (const char *item = tres; *item;) {
		size_t len = strcspn(item, ",");
		char one[FM_TEXT];
		if (!len) {		/* ",," */
			item++;
			continue;
		}
		if (!(len >= 4 && !strncmp(item, "cpu", 3) &&
		      (item[3] == '=' || item[3] == ':'))) {
			if (seen || len >= sizeof(one))
				return false;
			memcpy(one, item, len);
			one[len] = '\0';
			if (!fm_gpu_request(one, count, type, type_cap))
				return false;
			seen = true;
		}
		item += len + (item[len] == ',');
	}
	return true;
}

/* The GPUs (and type) a job asks for on each node: per node
 * (`--gres=gpu:N`, `--gpus-per-node`); per task or per socket where the
 * job fixes its tasks or sockets per node (`--ntasks-per-node`,
 * `--sockets-per-node`); or `--gpus=N` for the job. With a node count the
 * job fixed (`-N k`, or `-N1`), `--gpus=N` is ceil(N / k) per node: Slurm
 * gives N in all on those k nodes, at most that on one. With the count
 * left to Slurm it is `per_job`, and the plan takes the fewest nodes that
 * hold it (slurm/shapes.rs). False when it asks for GPUs in a way the
 * model does not hold: other GRES, two kinds of GPU request at once, per
 * task or socket with the tasks or sockets per node left to Slurm;
 * `why` (when given) then says which. */
static bool _gpus_asked_why(job_record_t *job_ptr, uint32_t *count,
			    uint32_t *per_job, uint32_t *shards, char *type,
			    size_t type_cap, const char **why)
{
	uint32_t node_n, job_n, task_n, socket_n;
	job_details_t *d = job_ptr->details;
	const char *unused;
	if (!why)
		why = &unused;
	*count = *per_job = *shards = 0;
	if (type && type_cap)
		type[0] = '\0';
	*why = "a GRES other than GPUs and shards";
	if (d && _shard_request(job_ptr->tres_per_node, &node_n) && node_n) {
		*why = "shards beside GPUs";
		*shards = node_n;
		return !(job_ptr->tres_per_job && job_ptr->tres_per_job[0]) &&
		       !(job_ptr->tres_per_socket &&
			 job_ptr->tres_per_socket[0]) &&
		       _gpu_entry(job_ptr->tres_per_task, &task_n, NULL, 0) &&
		       !task_n;
	}
	if (!d || !fm_gpu_request(job_ptr->tres_per_node, &node_n, NULL, 0) ||
	    !fm_gpu_request(job_ptr->tres_per_job, &job_n, NULL, 0) ||
	    !_gpu_entry(job_ptr->tres_per_task, &task_n, NULL, 0) ||
	    !fm_gpu_request(job_ptr->tres_per_socket, &socket_n, NULL, 0))
		return false;
	*why = "GPUs asked two ways at once";
	if (!!node_n + !!job_n + !!task_n + !!socket_n > 1)
		return false;
	*why = "GPUs per task without --ntasks-per-node";
	if (node_n) {
		*count = node_n;
		return fm_gpu_request(job_ptr->tres_per_node, &node_n, type,
				      type_cap);
	}
	if (task_n) {
		uint16_t tasks = d->ntasks_per_node;
		if (!tasks || tasks == NO_VAL16)
			return false;
		*count = task_n * tasks;
		return _gpu_entry(job_ptr->tres_per_task, &task_n, type,
				  type_cap);
	}
	*why = "GPUs per socket without --sockets-per-node";
	if (socket_n) {
		uint16_t sockets = d->mc_ptr ? d->mc_ptr->sockets_per_node :
					       NO_VAL16;
		if (!sockets || sockets == NO_VAL16)
			return false;
		*count = socket_n * sockets;
		return fm_gpu_request(job_ptr->tres_per_socket, &socket_n,
				      type, type_cap);
	}
	if (job_n) {
		uint32_t k = MAX(d->min_nodes, 1);
		if (d->max_nodes == k)
			*count = (job_n + k - 1) / k;
		else
			*per_job = job_n;
		return fm_gpu_request(job_ptr->tres_per_job, &job_n, type,
				      type_cap);
	}
	return true;
}

/* As _gpus_asked_why(), without the reason. */
static bool _gpus_asked(job_record_t *job_ptr, uint32_t *count,
			uint32_t *per_job, uint32_t *shards, char *type,
			size_t type_cap)
{
	return _gpus_asked_why(job_ptr, count, per_job, shards, type,
			       type_cap, NULL);
}

static int _unmanaged_part(void *x, void *key)
{
	return !fm_manages(((part_record_t *) x)->name);
}

/* Whether every partition the job may use is managed by fairmatch. Called
 * for every pending job twice a cycle: list_find_first() allocates no
 * iterator. */
static bool _partitions_managed(job_record_t *job_ptr)
{
	static int key;	/* unused: list_find_first() asserts a key */
	/* The default: the list walk (and its lock) was a twentieth of
	 * slurmctld's CPU on a 4,000-job queue. */
	if (fm_manages_every_partition())
		return job_ptr->part_ptr_list || job_ptr->part_ptr;
	if (job_ptr->part_ptr_list)
		return !list_find_first(job_ptr->part_ptr_list,
					_unmanaged_part, &key);
	return job_ptr->part_ptr && fm_manages(job_ptr->part_ptr->name);
}

/* The shape the matching models: a gang of nodes (`-N k`, the fewest
 * of a node range), and on each no GRES or some GPUs of any or one type
 * (--cpus-per-task, mirrored into tres_per_task from 23.11 on, asks for
 * nothing more: the CPU count is in details->min_cpus); not part of a
 * heterogeneous job. Array tasks are such jobs. */
static bool _modelled_shape(job_record_t *job_ptr)
{
	return !fm_unmodelled_why(job_ptr);
}

/* Jobs the plan handed to the first-come pass (FM_FIRST_COME), while
 * they are pending: few, so a short array. */
#define FM_MAX_HANDED 1024
static uint32_t handed[FM_MAX_HANDED];
static size_t n_handed = 0;

static bool _is_handed(uint32_t job_id)
{
	for (size_t i = 0; i < n_handed; i++)
		if (handed[i] == job_id)
			return true;
	return false;
}

void fm_hand_to_first_come(uint32_t job_id)
{
	if (!_is_handed(job_id) && n_handed < FM_MAX_HANDED)
		handed[n_handed++] = job_id;
}

/* Forgets the handed jobs that are no longer pending. */
static void _prune_handed(void)
{
	size_t kept = 0;
	for (size_t i = 0; i < n_handed; i++) {
		job_record_t *job_ptr = find_job_record(handed[i]);
		if (job_ptr && IS_JOB_PENDING(job_ptr))
			handed[kept++] = handed[i];
	}
	n_handed = kept;
}

const char *fm_unmodelled_why(job_record_t *job_ptr)
{
	job_details_t *d = job_ptr->details;
	uint32_t gpus, per_job, shards;
	const char *why = NULL;
	if (!d)
		return "no job details";
	if (n_handed && _is_handed(job_ptr->job_id))
		return "a gang wider than each GPU type of its partitions";
	if (job_ptr->het_job_id)
		return "a heterogeneous job";
	if (d->min_nodes > FM_MAX_GANG_NODES)
		return "more nodes than the plan holds";
	if (!_gpus_asked_why(job_ptr, &gpus, &per_job, &shards, NULL, 0,
			     &why))
		return why;
	return NULL;
}

const char *fm_unplanned_why(job_record_t *job_ptr)
{
	return _partitions_managed(job_ptr) ? fm_unmodelled_why(job_ptr) : NULL;
}

bool fm_managed(job_record_t *job_ptr)
{
	return _modelled_shape(job_ptr) && _partitions_managed(job_ptr);
}

/* Pending, not held, dependencies met, begin time reached. */
bool fm_startable(job_record_t *job_ptr)
{
	return IS_JOB_PENDING(job_ptr) && !IS_JOB_COMPLETING(job_ptr) &&
	       !IS_JOB_REVOKED(job_ptr) && job_ptr->details &&
	       job_ptr->priority != 0 && job_independent(job_ptr);
}

static double _limit_seconds(job_record_t *job_ptr)
{
	if (job_ptr->time_limit == NO_VAL || job_ptr->time_limit == INFINITE)
		return -1.0;
	return job_ptr->time_limit * 60.0;
}

static const char *_user(job_record_t *job_ptr)
{
	if (job_ptr->user_name)
		return _keep(job_ptr->user_name);
	return _keep(uid_to_string_cached(job_ptr->user_id));
}

static double _shares(slurmdb_assoc_rec_t *assoc)
{
	if (!assoc || assoc->shares_raw == SLURMDB_FS_USE_PARENT ||
	    assoc->shares_raw == NO_VAL)
		return 0;
	return assoc->shares_raw;
}

/* The association tree's shares, where accounting keeps one. */
static void _copy_shares(job_record_t *job_ptr, fm_job_t *j)
{
	assoc_mgr_lock_t locks = { .assoc = READ_LOCK };
	j->user_usage = j->account_usage = j->fair_share_factor = -1;
	assoc_mgr_lock(&locks);
	slurmdb_assoc_rec_t *user = job_ptr->assoc_ptr;
	if (user) {
		j->user_shares = _shares(user);
		if (user->usage)
			j->account_shares =
				_shares(user->usage->parent_assoc_ptr);
		/* Only priority/multifactor decays and keeps usage. */
		if (user->usage && fm_usage_kept()) {
			slurmdb_assoc_rec_t *acct =
				user->usage->parent_assoc_ptr;
			j->user_usage = (double) user->usage->usage_raw;
			j->fair_share_factor = user->usage->fs_factor;
			if (acct && acct->usage)
				j->account_usage =
					(double) acct->usage->usage_raw;
		}
	}
	assoc_mgr_unlock(&locks);
}

/* FAIRMATCH_HINT in the job's SPANK environment (the last one, should a
 * client have sent it twice), or NULL. Users can set it through the API
 * too, so Rust parses it as it parses a comment. */
static const char *_hint_option(job_record_t *job_ptr)
{
	static const char name[] = "FAIRMATCH_HINT=";
	const char *found = NULL;
	if (!job_ptr->spank_job_env)
		return NULL;
	for (uint32_t i = 0; i < job_ptr->spank_job_env_size; i++) {
		const char *e = job_ptr->spank_job_env[i];
		if (e && !strncmp(e, name, sizeof(name) - 1))
			found = e + sizeof(name) - 1;
	}
	return found ? _keep(found) : NULL;
}

static void _copy_job(job_record_t *job_ptr, fm_job_t *j)
{
	j->job_id = job_ptr->job_id;
	j->tasks = 1;
	j->user = _user(job_ptr);
	j->account = _keep(job_ptr->account);
	j->name = _keep(job_ptr->name);
	j->comment = _keep(job_ptr->comment);
	j->hint_option = _hint_option(job_ptr);
	j->time_limit = _limit_seconds(job_ptr);
	j->cpus = job_ptr->details ? job_ptr->details->min_cpus : 1;
	char type[FM_TEXT];
	if (!_gpus_asked(job_ptr, &j->gpus, &j->gpus_per_job, &j->shards,
			 type, sizeof(type)))
		j->gpus = j->gpus_per_job = j->shards = 0, type[0] = '\0';
	j->min_nodes = job_ptr->details ? MAX(job_ptr->details->min_nodes, 1) : 1;
	j->max_nodes = job_ptr->details ? job_ptr->details->max_nodes : 0;
	j->gpu_type = _keep(type);
	j->shares_cpus = job_ptr->details && job_ptr->details->share_res == 1;
	/* _copy_shares() knows */
	j->user_usage = j->account_usage = j->fair_share_factor = -1;
	/* Slurm sets begin_time when the job becomes eligible (released,
	 * dependencies met, --begin passed): a wait counts from then. */
	/* What preemption needs of a running job (docs/operations.md). */
	/* As fm_preempt.c will check it: a job ending (completing) is not. */
	j->requeue = job_ptr->batch_flag && job_ptr->details &&
		     job_ptr->details->requeue && !IS_JOB_COMPLETING(job_ptr) &&
		     fm_managed(job_ptr);
	j->qos = _keep(job_ptr->qos_ptr ? job_ptr->qos_ptr->name : NULL);
	j->notice = job_ptr->warn_signal ? job_ptr->warn_time : -1;
	j->priority = job_ptr->priority;
	j->set_by_admin = job_ptr->direct_set_prio != 0;
	j->qos_priority = job_ptr->qos_ptr ? job_ptr->qos_ptr->priority : 0;
	j->eligible = 0;
	if (job_ptr->details) {
		time_t t = job_ptr->details->submit_time;
		if (job_ptr->details->begin_time > t)
			t = job_ptr->details->begin_time;
		j->eligible = t;
	}
}

/* Its strings are kept (_keep), not owned. */
static void _free_job(fm_job_t *j)
{
	xfree(j->nodes);
}

static void _set_slurm_reason(job_record_t *job_ptr, int reason)
{
	if (job_ptr->state_reason == reason && !job_ptr->state_desc)
		return;
	job_ptr->state_reason = reason;
	xfree(job_ptr->state_desc);
	last_job_update = time(NULL);
}

/* The job's partitions that Slurm's limits accept now, comma-separated,
 * or NULL (and Slurm's reason set on the job) when there is none. */
static char *_runnable_partitions(job_record_t *job_ptr)
{
	part_record_t *part_ptr;
	int reason = WAIT_PART_CONFIG;
	char *names = NULL;
	list_t *parts = fm_job_partitions(job_ptr);

	while ((part_ptr = list_pop(parts))) {
		int r = fm_limits_in(job_ptr, part_ptr);
		if (r == WAIT_NO_REASON)
			xstrfmtcat(names, "%s%s", names ? "," : "",
				   part_ptr->name);
		else
			reason = r;
	}
	FREE_NULL_LIST(parts);
	if (!names)
		_set_slurm_reason(job_ptr, reason);
	return names;
}

/* Nodes the job may use now, whatever is running on them. Slurm's
 * reservation test holds the job (priority 0) if its reservation ended. */
static bitstr_t *_usable_nodes(job_record_t *job_ptr)
{
	job_details_t *d = job_ptr->details;
	bitstr_t *ok = bit_alloc(node_record_count);
	bit_set_all(ok);
	if (d->exc_node_bitmap)
		bit_and_not(ok, d->exc_node_bitmap);
	if (d->req_node_bitmap)
		bit_and(ok, d->req_node_bitmap);
	if (d->feature_list || d->feature_list_use) {
		bool has_xor = false;
		if (valid_feature_counts(job_ptr, false, ok, &has_xor) !=
		    SLURM_SUCCESS)
			bit_clear_all(ok);
	}
	time_t when = time(NULL);
	bitstr_t *resv_nodes = NULL;
	bool overlap = false;
	if (fm_job_test_resv(job_ptr, &when, false, &resv_nodes, &overlap,
			     false) == SLURM_SUCCESS && resv_nodes)
		bit_and(ok, resv_nodes);
	else
		bit_clear_all(ok);
	FREE_NULL_BITMAP(resv_nodes);
	return ok;
}

/* Pending tasks of an array the array's own limit (%N) lets start. When
 * a split leaves one task pending, Slurm makes the array's record that
 * task (job_array_post_sched()): it keeps its array_recs, without a task
 * bitmap or count, and is one pending job. */
static uint32_t _pending_tasks(job_record_t *job_ptr)
{
	job_array_struct_t *a = job_ptr->array_recs;
	if (!a)
		return 1;
	if (a->task_id_bitmap && a->task_cnt == 0)
		return 0;
	uint32_t tasks = a->task_id_bitmap ? a->task_cnt : 1;
	if (a->max_run_tasks) {
		if (a->tot_run_tasks >= a->max_run_tasks) {
			_set_slurm_reason(job_ptr, WAIT_ARRAY_TASK_LIMIT);
			return 0;
		}
		tasks = MIN(tasks, a->max_run_tasks - a->tot_run_tasks);
	}
	return MIN(tasks, FM_MAX_TASKS);
}

/* What ranking the job needs, cheaply: its partitions as submitted, no
 * nodes or shares yet. fm_check_pending() applies Slurm's rules later, and only to
 * the jobs the plan may weigh. */
static bool _copy_pending(job_record_t *job_ptr, fm_job_t *j)
{
	uint32_t tasks = _pending_tasks(job_ptr);
	if (!tasks)
		return false;
	_copy_job(job_ptr, j);
	j->tasks = tasks;
	j->partitions = _keep(job_ptr->partition);
	j->checked = FM_CHECK_NOT;
	/* The start squeue shows now: the plan writes one only where it
	 * moved, and a write a cycle dropped (its hold stopped) shows here. */
	j->start = job_ptr->start_time;
	return true;
}

/* Slurm's rules for one copied job: FM_CHECK_RUNNABLE with the partitions
 * and nodes they allow, or FM_CHECK_BLOCKED with Slurm's reason set. */
static int32_t _check(job_record_t *job_ptr, fm_job_t *j)
{
	if (!job_ptr || !fm_startable(job_ptr) || !fm_managed(job_ptr))
		return FM_CHECK_BLOCKED;
	uint32_t tasks = _pending_tasks(job_ptr);
	if (!tasks)
		return FM_CHECK_BLOCKED;
	/* Limits that do not depend on where it runs (MaxJobsPerUser,
	 * GrpJobs, ...): the job is not the plan's until they allow it.
	 * This sets Slurm's reason. */
	if (!acct_policy_job_runnable_pre_select(job_ptr, false))
		return FM_CHECK_BLOCKED;
	/* Licenses are the scheduler's to check, not select_nodes()'s. */
	if (license_job_test(job_ptr, time(NULL), true) != SLURM_SUCCESS) {
		_set_slurm_reason(job_ptr, WAIT_LICENSES);
		return FM_CHECK_BLOCKED;
	}
	char *parts = _runnable_partitions(job_ptr);
	if (!parts)
		return FM_CHECK_BLOCKED;
	bitstr_t *ok = _usable_nodes(job_ptr);
	/* After the reservation's test, as in Slurm's schedulers: that test
	 * holds a job whose reservation has ended, and Slurm, not the
	 * deadline, then decides what becomes of it. */
	if (job_ptr->priority == 0 || fm_deadline_blocks(job_ptr)) {
		xfree(parts);
		FREE_NULL_BITMAP(ok);
		return FM_CHECK_BLOCKED;
	}
	/* Only planned jobs need their shares: the ranking does not. */
	_copy_shares(job_ptr, j);
	j->tasks = MIN(j->tasks, tasks);
	j->partitions = _keep(parts);
	xfree(parts);
	uint32_t *idx = xcalloc(bit_set_count(ok) + 1, sizeof(uint32_t));
	size_t k = 0;
	for (int64_t i = bit_ffs(ok); i >= 0 && i < bit_size(ok); i++)
		if (bit_test(ok, i))
			idx[k++] = i;
	FREE_NULL_BITMAP(ok);
	j->nodes = idx;
	j->n_nodes = k;
	return FM_CHECK_RUNNABLE;
}

bool fm_check_pending(fm_snapshot_t *s, const size_t *idx, size_t n,
		      size_t *next, fm_hold_t *h)
{
	fm_job_t *pending = (fm_job_t *) s->pending;
	for (; *next < n; (*next)++) {
		if (fm_hold_spent(h))
			return false;
		if (idx[*next] >= s->n_pending)
			continue;
		fm_job_t *j = &pending[idx[*next]];
		if (j->checked != FM_CHECK_NOT)
			continue;
		/* Found again by id: the locks were let go since the copy. */
		j->checked = _check(find_job_record(j->job_id), j);
		h->worked = true;
	}
	return true;
}

static uint64_t _gpus_on(job_record_t *job_ptr, int k)
{
	uint64_t n = 0;
	gres_state_t *gs;
	if (!job_ptr->gres_list_alloc)
		return 0;
	list_itr_t *it = list_iterator_create(job_ptr->gres_list_alloc);
	while ((gs = list_next(it))) {
		gres_job_state_t *gj = gs->gres_data;
		if (!xstrcmp(gs->gres_name, "gpu") && gj &&
		    gj->gres_cnt_node_alloc && k < (int) gj->node_cnt)
			n += gj->gres_cnt_node_alloc[k];
	}
	list_iterator_destroy(it);
	return n;
}

/* The type of the GPUs a running job holds, when they are all of one
 * ("" otherwise, or untyped). */
static const char *_held_gpu_type(job_record_t *job_ptr)
{
	const char *type = NULL;
	bool one = true;
	gres_state_t *gs;
	if (!job_ptr->gres_list_alloc)
		return "";
	list_itr_t *it = list_iterator_create(job_ptr->gres_list_alloc);
	while ((gs = list_next(it))) {
		gres_job_state_t *gj = gs->gres_data;
		if (xstrcmp(gs->gres_name, "gpu") || !gj)
			continue;
		if (!gj->type_name || (type && xstrcmp(type, gj->type_name)))
			one = false;
		type = gj->type_name;
	}
	list_iterator_destroy(it);
	return (one && type) ? type : "";
}

/* A running job's nodes (indices, in node order), its node count, the
 * most GPUs it holds on one of them (a gang holds the same on each unless
 * Slurm spread a `--gpus=N` unevenly) and their type. */
static void _copy_held_nodes(job_record_t *job_ptr, fm_job_t *j)
{
	j->gpu_type = _keep(_held_gpu_type(job_ptr));
	bitstr_t *on = job_ptr->node_bitmap;
	uint32_t *idx = xcalloc(bit_set_count(on) + 1, sizeof(uint32_t));
	size_t k = 0;
	j->gpus = 0;
	for (int64_t i = bit_ffs(on); i >= 0 && i < bit_size(on); i++) {
		if (!bit_test(on, i))
			continue;
		j->gpus = MAX(j->gpus, (uint32_t) _gpus_on(job_ptr, k));
		idx[k++] = i;
	}
	j->nodes = idx;
	j->n_nodes = k;
	j->min_nodes = j->max_nodes = MAX(k, 1);
}

/* Adds what a running job holds, per node: its CPUs to `held` (when
 * given), and, for a job the plan does not model, its CPUs and GPUs to
 * the nodes' foreign counts (when `foreign` is given). A suspended job's
 * CPUs may go to others: it adds only its GPUs. */
static void _add_allocation(job_record_t *job_ptr, uint32_t *held,
			    fm_node_t *foreign)
{
	bool suspended = IS_JOB_SUSPENDED(job_ptr);
	job_resources_t *r = job_ptr->job_resrcs;
	if (!r || !r->node_bitmap || !r->cpus)
		return;
	int k = 0;
	for (int64_t i = bit_ffs(r->node_bitmap);
	     i >= 0 && i < bit_size(r->node_bitmap); i++) {
		if (!bit_test(r->node_bitmap, i))
			continue;
		if (i < node_record_count && held && !suspended)
			held[i] += r->cpus[k];
		if (i < node_record_count && foreign) {
			if (!suspended)
				foreign[i].foreign_cpus += r->cpus[k];
			foreign[i].foreign_gpus += _gpus_on(job_ptr, k);
		}
		k++;
	}
}

/* Whether a CPU another job holds may still go to a new one: some
 * partition lets jobs share CPUs (OverSubscribe=YES or FORCE above 1), or
 * preemption is configured (select_nodes() preempts to make room, and the
 * model gives partitions over the same nodes slots of their own). */
static bool _held_cpus_may_be_given(void)
{
	part_record_t *part_ptr;
	if (slurm_conf.preempt_type &&
	    xstrcmp(slurm_conf.preempt_type, "preempt/none"))
		return true;
	bool shared = false;
	list_itr_t *it = list_iterator_create(part_list);
	while ((part_ptr = list_next(it)))
		if ((part_ptr->max_share & ~SHARED_FORCE) > 1)
			shared = true;
	list_iterator_destroy(it);
	return shared;
}

/* Every job needs a CPU: when each available node's CPUs are all held by
 * running and completing jobs (a completing job's slot is busy in the
 * model too, and Slurm places no job on a completing node) and no held
 * CPU may be given to another job, no plan can start a job. (Nodes with
 * specialised cores count them, so there the test never says "held".) */
static bool _some_cpu_free(const fm_node_t *nodes, const uint32_t *held)
{
	node_record_t *node_ptr;
	if (_held_cpus_may_be_given())
		return true;
	for (int i = 0; (node_ptr = next_node(&i)); i++) {
		const fm_node_t *n = &nodes[node_ptr->index];
		if (n->available &&
		    held[node_ptr->index] < MAX(n->cpus, node_ptr->cpus))
			return true;
	}
	return false;
}

/* A node's GPUs as its shards see them: per GPU, the shards it offers
 * and holds, and whether it is allocated whole (then it offers none). A
 * GPU's shards and the GPU itself exclude each other (gres.html,
 * "Sharding"): gres/shard keeps one topology record per GPU, in the GPUs'
 * order. */
static void _copy_devices(node_record_t *node_ptr, fm_node_t *n)
{
	gres_state_t *gs, *shard = NULL, *gpu = NULL;
	if (!node_ptr->gres_list || !xstrstr(n->gres, "shard"))
		return;
	list_itr_t *it = list_iterator_create(node_ptr->gres_list);
	while ((gs = list_next(it))) {
		if (!xstrcmp(gs->gres_name, "shard"))
			shard = gs;
		else if (!xstrcmp(gs->gres_name, "gpu"))
			gpu = gs;
	}
	list_iterator_destroy(it);
	if (!shard || !shard->gres_data)
		return;
	gres_node_state_t *ns = shard->gres_data;
	gres_node_state_t *gn = gpu ? gpu->gres_data : NULL;
	bitstr_t *whole = gn ? gn->gres_bit_alloc : NULL;
	if (!ns->topo_gres_cnt_avail || !ns->topo_gres_cnt_alloc)
		return;
	/* A job that ended gives its shards back before its node is done
	 * completing, and select_nodes() places no job on a completing node:
	 * until then, every GPU there is held. */
	bool completing = IS_NODE_COMPLETING(node_ptr);
	n->n_devices = MIN(ns->topo_cnt, FM_MAX_DEVICES);
	for (uint32_t i = 0; i < n->n_devices; i++) {
		n->device_shards[i] = ns->topo_gres_cnt_avail[i];
		n->device_shards_used[i] = completing ?
			n->device_shards[i] : ns->topo_gres_cnt_alloc[i];
		bitstr_t *mine = ns->topo_gres_bitmap ?
				 ns->topo_gres_bitmap[i] : NULL;
		if (whole && mine && bit_size(mine) == bit_size(whole) &&
		    bit_overlap(mine, whole))
			n->device_whole |= (uint64_t) 1 << i;
	}
}

/* Fills `nodes` (indexed by node, foreign counts already added up). */
static void _copy_nodes(fm_node_t *nodes, const fm_reservation_t *resv)
{
	node_record_t *node_ptr;
	for (int i = 0; (node_ptr = next_node(&i)); i++) {
		fm_node_t *n = &nodes[node_ptr->index];
		n->name = xstrdup(node_ptr->name);
		n->cpus = node_ptr->config_ptr ? node_ptr->config_ptr->cpus :
						 node_ptr->cpus;
		/* Slurm allocates cores: a node whose CPUs= is below its
		 * sockets x cores x threads still runs that many tasks. */
		n->cpus = MAX(n->cpus, (uint32_t) node_ptr->tot_cores *
				       MAX(node_ptr->threads, 1));
		n->sockets = MAX(node_ptr->tot_sockets, 1);
		n->gres = xstrdup(node_ptr->config_ptr &&
				  node_ptr->config_ptr->gres ?
				  node_ptr->config_ptr->gres : "");
		n->available = bit_test(avail_node_bitmap, node_ptr->index) &&
			       !IS_NODE_DOWN(node_ptr) &&
			       !IS_NODE_DRAIN(node_ptr) &&
			       !IS_NODE_NO_RESPOND(node_ptr) &&
			       !IS_NODE_FUTURE(node_ptr);
		if (resv->nodes && bit_test(resv->nodes, node_ptr->index))
			n->reserved_from = resv->from;
		_copy_devices(node_ptr, n);
	}
	for (int i = 0; i < node_record_count; i++)
		if (!nodes[i].name) {	/* a hole in the table */
			nodes[i].name = xstrdup("");
			nodes[i].gres = xstrdup("");
		}
}

static int _preemption(void)
{
	if (!slurm_conf.preempt_type ||
	    !xstrcmp(slurm_conf.preempt_type, "preempt/none") ||
	    slurm_conf.preempt_mode == PREEMPT_MODE_OFF)
		return FM_PREEMPT_NONE;
	if (!xstrcmp(slurm_conf.preempt_type, "preempt/partition_prio"))
		return FM_PREEMPT_TIER;
	return FM_PREEMPT_OTHER;
}

static fm_partition_t *_copy_partitions(size_t *count)
{
	node_record_t *node_ptr;
	part_record_t *part_ptr;
	fm_partition_t *parts = xcalloc(list_count(part_list) + 1,
					sizeof(fm_partition_t));
	size_t np = 0;
	list_itr_t *it = list_iterator_create(part_list);
	while ((part_ptr = list_next(it))) {
		fm_partition_t *p = &parts[np++];
		uint32_t *idx = xcalloc(node_record_count + 1, sizeof(uint32_t));
		size_t k = 0;
		p->name = xstrdup(part_ptr->name);
		p->schedulable = (part_ptr->state_up & PARTITION_SCHED) != 0;
		p->max_cpus_per_node = part_ptr->max_cpus_per_node == INFINITE ?
			0 : part_ptr->max_cpus_per_node;
		p->max_cpus_per_socket = FM_PART_MAX_CPUS_PER_SOCKET(part_ptr);
		p->jobs_per_cpu = MAX(part_ptr->max_share & ~SHARED_FORCE, 1);
		p->force_share = (part_ptr->max_share & SHARED_FORCE) &&
				 (part_ptr->max_share & ~SHARED_FORCE) > 1;
		p->priority_tier = part_ptr->priority_tier;
		p->preemption = _preemption();
		for (int i = 0; part_ptr->node_bitmap && (node_ptr = next_node(&i));
		     i++)
			if (bit_test(part_ptr->node_bitmap, node_ptr->index))
				idx[k++] = node_ptr->index;
		p->nodes = idx;
		p->n_nodes = k;
	}
	list_iterator_destroy(it);
	*count = np;
	return parts;
}

/* What fm_startable() and _copy_pending() read of a record, and then
 * what it points to: asked for some jobs ahead, the cache misses of
 * several jobs overlap instead of following one another. */
#define PREFETCH_RECORDS 8
#define PREFETCH_STRINGS 4
static void _prefetch_record(const job_record_t *job_ptr)
{
	__builtin_prefetch(&job_ptr->job_state);
	__builtin_prefetch(&job_ptr->details);
	__builtin_prefetch(&job_ptr->priority);
	__builtin_prefetch(&job_ptr->state_reason);
	__builtin_prefetch(&job_ptr->array_recs);
	__builtin_prefetch(&job_ptr->comment);
	__builtin_prefetch(&job_ptr->name);
	__builtin_prefetch(&job_ptr->partition);
	__builtin_prefetch(&job_ptr->tres_per_node);
	__builtin_prefetch(&job_ptr->user_name);
}

static void _prefetch_strings(const job_record_t *job_ptr)
{
	__builtin_prefetch(job_ptr->details);
	__builtin_prefetch(job_ptr->user_name);
	__builtin_prefetch(job_ptr->account);
	__builtin_prefetch(job_ptr->name);
	__builtin_prefetch(job_ptr->comment);
	__builtin_prefetch(job_ptr->partition);
	__builtin_prefetch(job_ptr->tres_per_node);
}

/* What the snapshot takes from one job record: a running, completing or
 * suspended job's slot or foreign allocation, an ended job's run time, and
 * what the agent watches. */
static void _scan_record(job_record_t *job_ptr, fm_snapshot_t *s,
			 fm_walk_t *w, fm_watch_t *watch)
{
	fm_job_t *running = (fm_job_t *) s->running;
	fm_node_t *nodes = (fm_node_t *) s->nodes;
	if (IS_JOB_PENDING(job_ptr) && job_ptr->details &&
	    job_ptr->details->begin_time > w->scan_to) {
		time_t b = job_ptr->details->begin_time;
		if (!watch->next_begin || b < watch->next_begin)
			watch->next_begin = b;
	} else if (IS_JOB_RUNNING(job_ptr) || IS_JOB_SUSPENDED(job_ptr) ||
		   IS_JOB_COMPLETING(job_ptr)) {
		/* A completing job keeps its slot until its epilog is done:
		 * the slot is busy, not gone, so the model's slots (and the
		 * plan's memory of them) stay put. */
		if (_modelled_shape(job_ptr) && job_ptr->part_ptr &&
		    fm_manages(job_ptr->part_ptr->name) &&
		    job_ptr->node_cnt >= 1 && job_ptr->node_bitmap &&
		    !IS_JOB_SUSPENDED(job_ptr)) {
			fm_job_t *j = &running[s->n_running++];
			_copy_job(job_ptr, j);
			_copy_shares(job_ptr, j);
			j->partitions = _keep(job_ptr->partition);
			j->run_partition = _keep(job_ptr->part_ptr->name);
			j->start = job_ptr->start_time;
			_copy_held_nodes(job_ptr, j);
			_add_allocation(job_ptr, w->held, NULL);
		} else {
			_add_allocation(job_ptr, w->held, nodes);
		}
	}
	if (IS_JOB_FINISHED(job_ptr)) {
		if (job_ptr->end_time > watch->last_end) {
			watch->last_end = job_ptr->end_time;
			watch->ended_in_last = 0;
		}
		if (job_ptr->end_time == watch->last_end)
			watch->ended_in_last++;
		if (IS_JOB_COMPLETING(job_ptr))
			watch->completing++;
	}
	if (IS_JOB_COMPLETE(job_ptr) && job_ptr->part_ptr &&
	    job_ptr->start_time && job_ptr->end_time >= w->scan_from &&
	    job_ptr->end_time < w->scan_to) {
		fm_finished_t *f =
			&((fm_finished_t *) s->finished)[s->n_finished++];
		f->user = _user(job_ptr);
		f->name = _keep(job_ptr->name);
		f->partition = _keep(job_ptr->part_ptr->name);
		f->nodes = _keep(job_ptr->nodes);
		uint32_t shards;
		f->shards = _shard_request(job_ptr->tres_per_node, &shards) &&
			    shards;
		f->seconds = difftime(job_ptr->end_time, job_ptr->start_time);
		f->end = job_ptr->end_time;
	}
}

typedef struct {
	fm_snapshot_t *s;
	fm_walk_t *w;
	fm_watch_t *watch;
} walk_t;

static int _walk_one(void *x, void *arg)
{
	job_record_t *job_ptr = x;
	walk_t *walk = arg;
	fm_walk_t *w = walk->w;
	if (IS_JOB_PENDING(job_ptr)) {
		if (fm_managed(job_ptr)) {
			w->jobs[w->n_ids] = job_ptr;
			w->ids[w->n_ids++] = job_ptr->job_id;
		} else {
			list_append(w->unmodelled, job_ptr);
		}
	}
	_scan_record(job_ptr, walk->s, w, walk->watch);
	return 0;
}

static int _scan_one(void *x, void *arg)
{
	walk_t *walk = arg;
	_scan_record(x, walk->s, walk->w, walk->watch);
	return 0;
}

static int _not_startable(void *x, void *key)
{
	return !fm_startable(x);
}

void fm_snapshot_begin(fm_snapshot_t *s, time_t *last_finished_scan,
		       fm_watch_t *watch, fm_walk_t *w)
{
	memset(s, 0, sizeof(*s));
	memset(watch, 0, sizeof(*watch));
	s->now = fm_now();
	/* Finished jobs are taken from [previous scan's second, this
	 * second): end times have whole-second resolution, so a job that
	 * ends in the current second waits for a later scan and is never
	 * counted twice. */
	w->scan_from = *last_finished_scan;
	w->scan_to = (time_t) s->now;
	*last_finished_scan = w->scan_to;

	int total = list_count(job_list);
	s->nodes = xcalloc(node_record_count + 1, sizeof(fm_node_t));
	s->n_nodes = node_record_count;
	s->running = xcalloc(total + 1, sizeof(fm_job_t));
	s->finished = xcalloc(total + 1, sizeof(fm_finished_t));
	w->held = xcalloc(node_record_count + 1, sizeof(uint32_t));
	w->ids = xcalloc(total + 1, sizeof(uint32_t));
	w->jobs = xcalloc(total + 1, sizeof(job_record_t *));

	/* The only walk over the job list a cycle makes: each record costs
	 * cache misses (10,000 records took about 1.3 ms a walk), and
	 * list_for_each_ro() locks the list once, not once per record as
	 * an iterator does. The managed pending jobs are copied after it,
	 * and only when some CPU is free; until the locks are first
	 * yielded, from the pointers kept here, without a lookup by id. */
	_prune_handed();
	walk_t walk = { .s = s, .w = w, .watch = watch };
	list_for_each_ro(job_list, _walk_one, &walk);
	/* Not inside the walk: job_independent() may cancel a job whose
	 * dependency can never be met, which must not run under the job
	 * list's own lock. */
	list_delete_all(w->unmodelled, _not_startable, NULL);
	s->pending = xcalloc(w->n_ids + 1, sizeof(fm_job_t));
}

/* Running and ended jobs again, after the unmodelled jobs' pass started
 * some (rare on a cluster of ML jobs). */
static void _rescan(fm_snapshot_t *s, fm_walk_t *w, fm_watch_t *watch)
{
	/* Running jobs own no memory of their own (their strings are
	 * kept), so the copies are simply dropped. */
	s->n_running = 0;
	s->n_finished = 0;
	memset(watch, 0, sizeof(*watch));
	memset(w->held, 0, (node_record_count + 1) * sizeof(uint32_t));
	memset((void *) s->nodes, 0, (node_record_count + 1) * sizeof(fm_node_t));
	/* The list may have grown: started array tasks are new records. */
	int total = list_count(job_list);
	xfree(s->running);
	xfree(s->finished);
	s->running = xcalloc(total + 1, sizeof(fm_job_t));
	s->finished = xcalloc(total + 1, sizeof(fm_finished_t));
	walk_t walk = { .s = s, .w = w, .watch = watch };
	list_for_each_ro(job_list, _scan_one, &walk);
}

void fm_snapshot_nodes(fm_snapshot_t *s, const fm_reservation_t *resv,
		       fm_watch_t *watch, fm_walk_t *w, bool rescan)
{
	if (rescan)
		_rescan(s, w, watch);
	_copy_nodes((fm_node_t *) s->nodes, resv);
	s->partitions = _copy_partitions(&s->n_partitions);
	watch->cpu_free = _some_cpu_free(s->nodes, w->held);
}

void fm_walk_free(fm_walk_t *w)
{
	xfree(w->held);
	xfree(w->ids);
	xfree(w->jobs);
	FREE_NULL_LIST(w->unmodelled);
}

bool fm_snapshot_pending(fm_snapshot_t *s, const fm_walk_t *w, size_t *next,
			 bool yielded, fm_hold_t *h)
{
	fm_job_t *pending = (fm_job_t *) s->pending;
	for (; *next < w->n_ids; (*next)++) {
		if (fm_hold_spent(h))
			return false;
		/* After a yield, found again by id: the job may have ended,
		 * changed or been purged meanwhile. */
		job_record_t *job_ptr;
		if (yielded) {
			job_ptr = find_job_record(w->ids[*next]);
		} else {
			job_ptr = w->jobs[*next];
			if (*next + PREFETCH_RECORDS < w->n_ids)
				_prefetch_record(w->jobs[*next + PREFETCH_RECORDS]);
			if (*next + PREFETCH_STRINGS < w->n_ids)
				_prefetch_strings(w->jobs[*next + PREFETCH_STRINGS]);
		}
		if (job_ptr && fm_startable(job_ptr) &&
		    (!yielded || fm_managed(job_ptr)) &&
		    _copy_pending(job_ptr, &pending[s->n_pending]))
			s->n_pending++;
		h->worked = true;
	}
	return true;
}

void fm_free_snapshot(fm_snapshot_t *s)
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
	_strings_reset();
	xfree(s->nodes);
	xfree(s->partitions);
	xfree(s->pending);
	xfree(s->running);
	xfree(s->finished);
}
