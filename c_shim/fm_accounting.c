/*
 * Run times from slurmdbd at the first start (LearnFromAccounting): the
 * jobs that completed in the configured window, as if the plugin had seen
 * them end, so a site switching to fairmatch starts with what its history
 * knows. Read by the agent thread outside slurmctld's locks, a day at a
 * time, so that memory holds one day's jobs at most, and within a time
 * budget.
 */

#include "fm_slurm.h"
#include "fairmatch_shim.h"

#if SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(23, 2, 0)
#include "src/interfaces/accounting_storage.h"
#else
#include "src/common/slurm_accounting_storage.h"
#endif

#define DAY 86400
/* Seconds the whole read may take; the older days left are skipped. */
#define BUDGET_SECONDS 60

/* One day's completed jobs, handed to the planner. Returns false when
 * slurmdbd gave no answer; adds the jobs read to *read and the runs the
 * planner took to *taken. */
static bool _read_window(time_t from, time_t to, const char *cluster,
			 uid_t uid, size_t *read, size_t *taken)
{
	slurmdb_job_cond_t *cond = xmalloc(sizeof(*cond));
	cond->usage_start = from;
	cond->usage_end = to;
	cond->flags = JOBCOND_FLAG_NO_STEP | JOBCOND_FLAG_NO_TRUNC;
	/* Any scheduling flags, as sacct asks (0 would mean "none set"). */
	cond->db_flags = SLURMDB_JOB_FLAG_NOTSET;
	cond->state_list = list_create(xfree_ptr);
	list_append(cond->state_list, xstrdup_printf("%d", JOB_COMPLETE));
	cond->cluster_list = list_create(xfree_ptr);
	list_append(cond->cluster_list, xstrdup(cluster));
	list_t *jobs = jobacct_storage_g_get_jobs_cond(acct_db_conn, uid, cond);
	slurmdb_destroy_job_cond(cond);
	if (!jobs)
		return false;
	fm_finished_t *runs = xcalloc(list_count(jobs) + 1, sizeof(*runs));
	size_t n = 0;
	list_itr_t *it = list_iterator_create(jobs);
	slurmdb_job_rec_t *job;
	while ((job = list_next(it))) {
		if ((job->state & JOB_STATE_BASE) != JOB_COMPLETE ||
		    !job->partition || !job->start || job->end <= job->start)
			continue;
		fm_finished_t *f = &runs[n++];
		f->user = job->user ? job->user : uid_to_string_cached(job->uid);
		f->name = job->jobname;
		f->partition = job->partition;
		f->nodes = job->nodes;
		f->seconds = job->elapsed;
		f->end = job->end;
	}
	list_iterator_destroy(it);
	/* The planner copies the strings before the records are freed. */
	*taken += fairmatch_rs_add_accounting_runs(runs, n);
	*read += n;
	xfree(runs);
	FREE_NULL_LIST(jobs);
	return true;
}

void fm_learn_from_accounting(void)
{
	double back = fairmatch_rs_accounting_wanted();
	if (back <= 0)
		return;
	slurmctld_lock_t conf_read = { .conf = READ_LOCK };
	lock_slurmctld(conf_read);
	bool dbd = acct_db_conn &&
		   xstrcasestr(slurm_conf.accounting_storage_type, "slurmdbd");
	char *cluster = xstrdup(slurm_conf.cluster_name);
	uid_t uid = slurm_conf.slurm_user_id;
	unlock_slurmctld(conf_read);
	if (!dbd) {
		xfree(cluster);
		return;
	}
	time_t now = time(NULL);
	time_t from = now - (time_t) back;
	size_t read = 0, taken = 0;
	/* Newest first: a cut budget leaves the oldest days out. */
	time_t to = now;
	while (to > from) {
		if (difftime(time(NULL), now) > BUDGET_SECONDS) {
			info("fairmatch: reading slurmdbd took over %d s; the jobs that ended before %ld are left out",
			     BUDGET_SECONDS, (long) to);
			break;
		}
		time_t start = MAX(to - DAY + 1, from);
		if (!_read_window(start, to, cluster, uid, &read, &taken)) {
			/* Slurm logged why (unreachable, or a refusal such
			 * as MaxQueryTimeRange) just before. */
			info("fairmatch: slurmdbd gave no jobs (its error is above); run times are learned from the jobs that end from now on");
			break;
		}
		to = start - 1;
	}
	xfree(cluster);
	info("fairmatch: read %zu completed jobs of the last %.0f days from slurmdbd in %.0f s; %zu runs to learn",
	     read, back / DAY, difftime(time(NULL), now), taken);
}
